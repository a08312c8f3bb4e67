package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// soakPlan is one form of TestSoak.
type soakPlan struct {
	threads  int     // threads served in all
	workers  int     // people writing at once, each in one thread at a time
	restarts int     // kill -9 and start again, spread over the first restartSpan of the threads
	span     float64 // the share of the threads over which the restarts happen
	warmup   float64 // the share of the threads after the last restart before state is measured
	every    time.Duration
	seed     uint64
	idle     time.Duration // idle_evict
}

// soakPlanFromEnv: the CI form, or THREADSMITH_SOAK=<threads> for a long
// one; THREADSMITH_SOAK_SEED replays the random choices.
func soakPlanFromEnv(t *testing.T) soakPlan {
	// The CI form is small: it shares 2 cores with the whole -race suite.
	p := soakPlan{threads: 150, workers: 16, restarts: 2, span: 0.3, warmup: 0.1, every: time.Second,
		seed: uint64(time.Now().UnixNano()), idle: time.Second}
	if s := os.Getenv("THREADSMITH_SOAK"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 100 {
			t.Fatalf("THREADSMITH_SOAK=%q: want a number of threads, at least 100", s)
		}
		p.threads, p.restarts, p.every = n, max(3, n/1000), 5*time.Second
	}
	if s := os.Getenv("THREADSMITH_SOAK_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("THREADSMITH_SOAK_SEED=%q: %v", s, err)
		}
		p.seed = n
	}
	return p
}

// sample is what the bot process and its data_dir measure at one moment.
type sample struct {
	at                time.Duration
	start             int     // the process's start number
	traffic           bool    // taken while the traffic went on
	threads, messages int     // served (finished) threads, messages sent so far
	rss, heap         float64 // heap: the collector's goal, twice the live heap (GOGC=100)
	goroutines, fds   float64
	live              float64 // threadsmith_threads_live
	// bytes: the SQLite database file, its write-ahead log (bounded by the
	// store's journal_size_limit, and as large as checkpoints let it be at
	// that moment, so not a measure of what is stored), the rest of
	// data_dir
	db, wal, data float64
}

// soak is TestSoak's traffic: workers that each play one person in one
// thread at a time, a restarter, and a sampler.
type soak struct {
	e    *env
	r    *replica
	p    soakPlan
	data string // the replica's data_dir

	mu      sync.Mutex
	threads []*chatThread
	samples []sample
	stuck   []string

	started, done, messages atomic.Int64
	traffic                 atomic.Bool // the workers are writing
	begin                   time.Time
}

// TestSoak serves many threads through the real binary on SQLite, with the
// fake Slack, the fake LLM and a bare git remote, in compressed time (idle
// eviction after a second, the bot's Slack budgets raised to match): new
// threads, follow-ups (some queued behind a run, some after the thread was
// evicted), steers, !stop, !reset, long answers, pushes, and kill -9 and
// start again. It samples the process every few seconds and fails when,
// after the warm-up that follows the last restart, memory, goroutines,
// descriptors or threads in memory grow with the threads served, when the
// database grows faster than what it stores, or when the chaos audit finds a
// message lost, run twice or answered twice.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the bot binary for minutes")
	}
	p := soakPlanFromEnv(t)
	t.Logf("plan: %d threads, %d at once, %d restarts over the first %.0f%%, idle_evict %s; seed %d (THREADSMITH_SOAK_SEED)",
		p.threads, p.workers, p.restarts, p.span*100, p.idle, p.seed)
	e := newEnv(t, setup{
		driver: "sqlite", logLevel: "warn", timeout: 10*time.Minute + time.Duration(p.threads)*time.Second,
		config: fmt.Sprintf("idle_evict: %s\nmax_concurrent_runs: %d\n", p.idle, p.workers),
		// Compressed time: Slack's budgets per second as if per minute.
		slackConfig: "  rate: {post_per_second: 60, post_burst: 60, update_per_message_per_second: 20, update_per_minute: 30000, status_per_minute: 30000}\n",
		// The collector's plain pacing, without the bot's heap floor: the
		// heap goal is then twice the heap live at the last collection.
		env: []string{"GOGC=100"},
	})
	e.llm.Handle(soakModel)
	r := e.addReplica()
	if err := r.start(); err != nil {
		t.Fatal(err)
	}
	s := &soak{e: e, r: r, p: p, data: filepath.Join(filepath.Dir(r.config), "data"), begin: time.Now()}

	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	var bg sync.WaitGroup
	bg.Go(func() { s.sampler(ctx) })
	var restartErr error
	bg.Go(func() { restartErr = s.restarter(ctx) })

	var wg sync.WaitGroup
	s.traffic.Store(true)
	rng := rand.New(rand.NewPCG(p.seed, p.seed^0x50a4))
	for w := range p.workers {
		wr := rand.New(rand.NewPCG(rng.Uint64(), uint64(w)))
		wg.Go(func() {
			for {
				n := int(s.started.Add(1))
				if n > p.threads || ctx.Err() != nil {
					return
				}
				s.thread(n, wr)
				s.done.Add(1)
			}
		})
	}
	wg.Wait()
	s.traffic.Store(false)
	traffic := time.Since(s.begin)

	// Everything answered, and every promise kept.
	var last *audit
	err := e.poll("every message answered", 3*time.Minute, 500*time.Millisecond, func() (bool, error) {
		last = e.audit(s.threads)
		return last.ok() || len(last.problems) > 0, nil
	})
	if err := s.take(); err != nil { // the state at the end, settled
		t.Logf("the settled sample: %v", err)
	}
	cancel()
	bg.Wait()
	if restartErr != nil {
		t.Fatal(restartErr)
	}
	if err := r.unexpectedExit(); err != nil {
		t.Fatal(err)
	}
	t.Logf("traffic %s, settled %s later: %s", traffic.Round(time.Second), (time.Since(s.begin) - traffic).Round(time.Second), last)
	if len(s.stuck) > 0 {
		t.Logf("%d waits ran out (the audit decides): %v", len(s.stuck), s.stuck[:min(len(s.stuck), 10)])
	}
	if err != nil || !last.ok() {
		t.Errorf("audit: %v\n%s", err, last)
		for i, th := range append(last.bad, last.stuck...) {
			if i == 4 {
				break
			}
			t.Log(e.explain(th))
		}
	}
	for _, f := range s.check(last) {
		t.Error(f)
	}
}

// thread plays one person in a new thread: a mention, maybe stopped or
// steered, follow-ups (queued behind the run, after an eviction, or after
// the answer), maybe a !reset; it waits for each answer it needs.
func (s *soak) thread(n int, rng *rand.Rand) {
	e := s.e
	th := &chatThread{n: n, channel: fmt.Sprintf("C0SOAK%03d", n%64), ts: map[string]string{}}
	s.mu.Lock()
	s.threads = append(s.threads, th)
	s.mu.Unlock()
	users := []string{aliceID, bobID}
	user := users[rng.IntN(2)]
	say := func(text string, mention bool) string {
		tok := fmt.Sprintf("TKN%06dm%02d", n, len(th.tokens))
		text += " " + tok
		var ts string
		switch {
		case th.root == "":
			th.root = e.slack.Mention(th.channel, user, text, "")
			ts = th.root
		case mention:
			ts = e.slack.Mention(th.channel, user, text, th.root)
		default:
			ts = e.slack.UserMessage(th.channel, user, text, th.root)
		}
		th.tokens = append(th.tokens, tok)
		th.ts[tok] = ts
		s.messages.Add(1)
		return tok
	}
	command := func(text string) {
		e.slack.UserMessage(th.channel, user, text, th.root)
		s.messages.Add(1)
	}
	var tags string
	if rng.Float64() < 0.15 {
		tags += " PUSH" // the model writes a file: a commit, a push
	}
	if rng.Float64() < 0.10 {
		tags += " LONG" // an answer longer than one Slack message
	}
	var last string
	switch x := rng.Float64(); {
	case x < 0.05:
		say("please look at SLOW"+tags, true)
		s.wait(th, "⏳ working", 30*time.Second)
		command("!stop")
		th.stops++
		last = say("go on", false)
	case x < 0.15:
		say("please look at SLOW"+tags, true)
		s.wait(th, "⏳ working", 30*time.Second)
		last = say("!steer rather this", false)
	default:
		last = say("please look at"+tags, true)
	}
	follow := []int{0, 0, 0, 1, 1, 1, 1, 2, 2, 3}[rng.IntN(10)]
	for range follow {
		switch x := rng.Float64(); {
		case x < 0.25: // while the run goes: queued behind it
		case x < 0.40: // after the thread was evicted
			s.answered(th, last)
			time.Sleep(s.p.idle + time.Duration(rng.Int64N(int64(s.p.idle))))
		default:
			s.answered(th, last)
		}
		last = say("one more thing", rng.IntN(4) == 0)
	}
	s.answered(th, last)
	if rng.Float64() < 0.05 {
		command("!reset")
		s.wait(th, "new conversation", 30*time.Second)
		s.answered(th, say("starting over", false))
	}
}

// answered waits until a bot message answers tok; when the thread is told a
// run was interrupted (a restart), or nothing comes, the person asks again
// (a new token), as a person would.
func (s *soak) answered(th *chatThread, tok string) {
	for attempt := 0; ; attempt++ {
		notices := s.count(th, noticeRE.MatchString)
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) && s.e.ctx.Err() == nil {
			if s.count(th, func(t string) bool { return strings.Contains(t, tok) && !strings.Contains(t, "_interrupted") }) > 0 {
				return
			}
			if s.count(th, noticeRE.MatchString) > notices {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if attempt == 2 || s.e.ctx.Err() != nil {
			s.mu.Lock()
			s.stuck = append(s.stuck, fmt.Sprintf("thread %d: %s", th.n, tok))
			s.mu.Unlock()
			return
		}
		tok = fmt.Sprintf("TKN%06dm%02d", th.n, len(th.tokens))
		ts := s.e.slack.UserMessage(th.channel, aliceID, "are you there? "+tok, th.root)
		th.tokens = append(th.tokens, tok)
		th.ts[tok] = ts
		s.messages.Add(1)
	}
}

// wait waits, at most d, for a bot message in the thread containing text.
func (s *soak) wait(th *chatThread, text string, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) && s.e.ctx.Err() == nil {
		if s.count(th, func(t string) bool { return strings.Contains(t, text) }) > 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// count counts the bot's messages in the thread whose text matches.
func (s *soak) count(th *chatThread, match func(string) bool) int {
	n := 0
	bot := s.e.slack.BotUserID()
	for _, m := range s.e.slack.Messages(th.channel, th.root) {
		if m.User == bot && match(m.Text) {
			n++
		}
	}
	return n
}

// restarter kills the bot (SIGKILL) and starts it again p.restarts times,
// evenly over the first p.span of the threads.
func (s *soak) restarter(ctx context.Context) error {
	for i := 1; i <= s.p.restarts; i++ {
		at := int64(float64(s.p.threads) * s.p.span * float64(i) / float64(s.p.restarts))
		for s.started.Load() < at {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(50 * time.Millisecond):
			}
		}
		if _, err := s.r.kill(); err != nil {
			return err
		}
		time.Sleep(time.Duration(rand.Int64N(int64(time.Second))))
		if err := s.r.start(); err != nil {
			return err
		}
	}
	return nil
}

// sampler takes a sample every p.every until ctx ends, and logs one every
// twentieth of the threads (a long form's progress).
func (s *soak) sampler(ctx context.Context) {
	tick := time.NewTicker(s.p.every)
	defer tick.Stop()
	step, next := max(s.p.threads/20, 1), 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			_ = s.take() // none while the bot restarts
		}
		if s.done.Load() >= int64(next) {
			next += step
			s.mu.Lock()
			if len(s.samples) > 0 {
				x := s.samples[len(s.samples)-1]
				s.e.tb.Logf("%s: %d threads, %d messages; RSS %.1f MiB, heap goal %.1f MiB, %.0f goroutines, %.0f descriptors, %.0f threads in memory; database %.1f MiB, data_dir %.1f MiB",
					x.at.Round(time.Second), x.threads, x.messages, x.rss/(1<<20), x.heap/(1<<20), x.goroutines, x.fds, x.live, x.db/(1<<20), x.data/(1<<20))
			}
			s.mu.Unlock()
		}
	}
}

// take records a sample; it fails while the process is down or restarting.
func (s *soak) take() error {
	s.r.mu.Lock()
	p, start := s.r.proc, s.r.starts
	s.r.mu.Unlock()
	if p == nil || p.done() {
		return errors.New("the bot is not running")
	}
	pid := p.cmd.Process.Pid
	x := sample{at: time.Since(s.begin), start: start, traffic: s.traffic.Load(), threads: int(s.done.Load()), messages: int(s.messages.Load())}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err
	}
	for l := range strings.Lines(string(status)) {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			x.rss = kb * 1024
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return err
	}
	x.fds = float64(len(fds))
	m, err := scrape(fmt.Sprintf("http://127.0.0.1:%d/metrics", s.r.port))
	if err != nil {
		return err
	}
	x.heap, x.goroutines, x.live = m["go_memstats_next_gc_bytes"], m["go_goroutines"], m["threadsmith_threads_live"]
	_ = filepath.WalkDir(s.data, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		switch {
		case d.Name() == sqlite.FileName:
			x.db += float64(info.Size())
		case strings.HasPrefix(d.Name(), sqlite.FileName):
			x.wal += float64(info.Size())
		default:
			x.data += float64(info.Size())
		}
		return nil
	})
	s.mu.Lock()
	s.samples = append(s.samples, x)
	s.mu.Unlock()
	return nil
}

// scrape reads the unlabelled samples of a Prometheus text exposition.
func scrape(url string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 || strings.HasPrefix(f[0], "#") || strings.Contains(f[0], "{") {
			continue
		}
		if v, err := strconv.ParseFloat(f[1], 64); err == nil {
			out[f[0]] = v
		}
	}
	return out, sc.Err()
}

// check holds the samples of the last process, after its warm-up, to the
// bounds: state flat in the threads served (the least-squares slope times
// the threads of the window stays under a bound), the database linear in
// the messages stored, the rest of data_dir (the threads' worktrees) in
// the threads. It logs the figures.
func (s *soak) check(a *audit) []string {
	s.mu.Lock()
	all := slices.Clone(s.samples)
	s.mu.Unlock()
	var fails []string
	if len(all) == 0 {
		return []string{"no samples"}
	}
	lastStart := all[len(all)-1].start
	var seg []sample
	for _, x := range all {
		if x.start == lastStart {
			seg = append(seg, x)
		}
	}
	from := seg[0].threads + int(float64(s.p.threads)*s.p.warmup)
	// The fit is over the traffic: the end, settled, is reported.
	var win []sample
	for _, x := range seg {
		if x.threads >= from && x.traffic {
			win = append(win, x)
		}
	}
	if len(win) < 8 {
		return []string{fmt.Sprintf("%d samples after the warm-up of the last process (from thread %d), want at least 8: the soak is too short to judge", len(win), from)}
	}
	w0, w1, end := win[0], win[len(win)-1], all[len(all)-1]
	span := float64(w1.threads - w0.threads)
	type bound struct {
		name string
		get  func(sample) float64
		abs  float64 // growth allowed over the window, plus
		rel  float64 // this share of the warm level
		unit float64
		u    string
	}
	const mib = 1 << 20
	for _, b := range []bound{
		{"RSS", func(x sample) float64 { return x.rss }, 24 * mib, 0.25, mib, "MiB"},
		{"Go heap goal (2 × live)", func(x sample) float64 { return x.heap }, 16 * mib, 0.25, mib, "MiB"},
		{"goroutines", func(x sample) float64 { return x.goroutines }, 40, 0.1, 1, ""},
		{"open descriptors", func(x sample) float64 { return x.fds }, 16, 0.1, 1, ""},
		{"threads in memory", func(x sample) float64 { return x.live }, float64(2 * s.p.workers), 0, 1, ""},
	} {
		slope := fit(win, func(x sample) float64 { return float64(x.threads) }, b.get)
		grew := slope * span
		warm := median(win[:max(1, len(win)/4)], b.get)
		allowed := b.abs + b.rel*warm
		line := fmt.Sprintf("%s: %.1f%s after the warm-up, %.1f%s at the end of the traffic, %.1f%s settled; fitted growth %+.1f%s over %d threads (%+.3g%s per 1,000), allowed %.1f%s",
			b.name, b.get(w0)/b.unit, b.u, b.get(w1)/b.unit, b.u, b.get(end)/b.unit, b.u, grew/b.unit, b.u, int(span), slope*1000/b.unit, b.u, allowed/b.unit, b.u)
		s.e.tb.Log(line)
		if grew > allowed {
			fails = append(fails, "grows with the threads served: "+line)
		}
	}
	// Disk: the database by what it stores, the rest by the threads.
	perMsg := fit(win, func(x sample) float64 { return float64(x.messages) }, func(x sample) float64 { return x.db })
	perThread := fit(win, func(x sample) float64 { return float64(x.threads) }, func(x sample) float64 { return x.data })
	s.e.tb.Logf("database %.1f MiB → %.1f MiB: %.0f B per message sent (fitted), its write-ahead log %.1f MiB at the end; data_dir without it %.1f MiB → %.1f MiB: %.0f B per thread",
		w0.db/mib, w1.db/mib, perMsg, w1.wal/mib, w0.data/mib, w1.data/mib, perThread)
	if perMsg > 64<<10 {
		fails = append(fails, fmt.Sprintf("the database grows %.0f B per message, more than the 64 KiB a message, its run and its answers store", perMsg))
	}
	if w1.wal > 80<<20 {
		fails = append(fails, fmt.Sprintf("the write-ahead log is %.1f MiB, past the store's journal_size_limit (64 MiB) and a margin", w1.wal/mib))
	}
	if perThread > 1<<20 {
		fails = append(fails, fmt.Sprintf("data_dir grows %.0f B per thread, more than a worktree of the test repository and its scratch (1 MiB)", perThread))
	}
	first := all[0]
	s.e.tb.Logf("figures: %d threads, %d messages in %s; RSS %.1f MiB after the warm-up, %.1f MiB at the end; goroutines %.0f, %.0f; descriptors %.0f, %.0f; threads in memory %.0f at the end; %d restarts; first sample: RSS %.1f MiB, %.0f goroutines",
		end.threads, end.messages, end.at.Round(time.Second), w0.rss/mib, end.rss/mib, w0.goroutines, end.goroutines, w0.fds, end.fds, end.live, s.p.restarts, first.rss/mib, first.goroutines)
	s.e.tb.Logf("audit: %d messages (tokens) answered, %d runs, %d problems (lost, run twice, answered twice)", a.tokens, a.runs, len(a.problems))
	return fails
}

// fit is the least-squares slope of y over x.
func fit(xs []sample, x, y func(sample) float64) float64 {
	var n, sx, sy, sxx, sxy float64
	for _, s := range xs {
		a, b := x(s), y(s)
		n++
		sx += a
		sy += b
		sxx += a * a
		sxy += a * b
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

func median(xs []sample, get func(sample) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = get(x)
	}
	slices.Sort(v)
	if len(v) == 0 {
		return math.NaN()
	}
	return v[len(v)/2]
}

// longAnswer makes an answer longer than a Slack message.
var longAnswer = strings.Repeat("Here is a line of a long explanation that goes on for a while.\n", 90)

// soakModel is the fake model of TestSoak: it answers ANS-<request> and the
// tokens of the user messages since its last text answer; SLOW waits three
// seconds first (time for a !stop or a !steer), PUSH writes a file first
// (the run commits, the thread's branch is pushed), LONG answers at length.
func soakModel(r llmfake.Request) llmfake.Response {
	var toks []string
	var said strings.Builder
	afterTool := len(r.Messages) > 0 && r.Messages[len(r.Messages)-1].Role == "tool"
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role == "assistant" && len(m.ToolCalls) == 0 {
			break
		}
		if m.Role == "user" {
			toks = append(toks, tokenRE.FindAllString(m.Content, -1)...)
			said.WriteString(m.Content)
		}
	}
	slices.Reverse(toks)
	tags := said.String()
	if !afterTool && strings.Contains(tags, "PUSH") {
		return llmfake.ToolCallReply(llmfake.Call{ID: fmt.Sprintf("w%d", r.Seq), Name: "write",
			Args: fmt.Sprintf(`{"path":"notes/%d.txt","content":"%s\n"}`, r.Seq, strings.Join(toks, " "))})
	}
	text := fmt.Sprintf("ANS-%d re %s", r.Seq, strings.Join(toks, " "))
	if strings.Contains(tags, "LONG") {
		text += "\n" + longAnswer
	}
	resp := llmfake.TextReply(text)
	if !afterTool && strings.Contains(tags, "SLOW") {
		resp.Steps = append([]llmfake.Step{llmfake.Delay(3 * time.Second)}, resp.Steps...)
	}
	return resp
}
