package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/internal/fakes/mcpfake"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
)

// firstRequestThreads is the size of BenchmarkMentionToFirstRequest's bursts.
const firstRequestThreads = 100

// BenchmarkMentionToFirstRequest measures what a person waits for before the
// model starts on their mention, under a burst of 100 mentions in 100 new
// threads (each in its own channel), and again for the same threads resumed
// after a restart of the program (a mention in each thread):
//
//   - ack: the fake writing the envelope → reading its ack (input stored);
//   - post: the envelope → the thread's status post (the first thing the
//     person sees);
//   - request: the envelope → the fake LLM receiving the thread's first model
//     request (workspace, sandbox, tools and context ready).
//
// p50 and p99 of each, for new and for resumed threads, with
// max_concurrent_runs at 100 so that every thread runs at once. The variants tell
// where the time goes: "sandbox-mcp" runs the default sandbox (mode auto)
// with one stdio MCP server per thread started in it, "none" runs
// sandbox.mode none and no MCP server; new against resumed is the
// workspace's creation and the first session against a resume from the
// store.
//
// While the model's 100 streams are held open (the fake LLM answers only
// when released), it also reports the memory of 100 live threads: the
// growth of the process's VmRSS, of the Go heap in use, and of the
// proportional set size of its child processes (each thread's sandbox init,
// started ahead for its next command, and its MCP server), from before the
// burst to the moment the 100th request arrived.
//
//	go test -run '^$' -bench MentionToFirstRequest -benchtime 1x -count 3 ./cmd/bot/
func BenchmarkMentionToFirstRequest(b *testing.B) {
	b.Run("sandbox-mcp", func(b *testing.B) {
		sandboxtest.New(b, sandbox.Config{}) // or skip, saying why
		bin := mcpfake.Build(b)
		for range b.N {
			firstRequestBurst(b, func(c *config.Config) {
				c.Sandbox.ReadOnlyPaths = []string{filepath.Dir(bin)}
				c.MCP.Servers = []config.MCPServer{{Name: "fake", Command: bin, Timeout: config.DefaultMCPTimeout}}
			})
		}
	})
	b.Run("none", func(b *testing.B) {
		for range b.N {
			firstRequestBurst(b, func(c *config.Config) { c.Sandbox.Mode = config.SandboxNone })
		}
	})
}

// firstRequestBurst runs one program through a burst of new threads, a
// restart and a burst of resumed ones, and reports the figures.
func firstRequestBurst(b *testing.B, tweak func(*config.Config)) {
	// Every thread of the burst runs at once (the default caps runs at 8:
	// with the streams held, the rest would wait for them).
	e := newSlackFakes(b, quietLogs(), withConfig(tweak), withConfig(func(c *config.Config) { c.MaxConcurrentRuns = firstRequestThreads }))
	var cancel context.CancelFunc
	e.ctx, cancel = context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	e.start()

	var mu sync.Mutex
	arrived := map[string]time.Time{} // the mention's tag → its first model request
	gate := make(chan struct{})       // closed: the held streams answer
	want, reached := 0, make(chan struct{})
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		now := time.Now()
		texts := userTexts(r)
		tag := ""
		if len(texts) > 0 {
			tag = burstTag(texts[len(texts)-1])
		}
		mu.Lock()
		if _, seen := arrived[tag]; !seen && tag != "" {
			arrived[tag] = now
			if len(arrived) == want {
				close(reached)
			}
		}
		g := gate
		mu.Unlock()
		return llmfake.Stream(llmfake.Await(g), llmfake.Content("answered "+tag), llmfake.Finish("stop"), llmfake.Usage(10, 1, 0), llmfake.Done())
	})
	expect := func(n int) <-chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		want, reached = n, make(chan struct{})
		return reached
	}
	waitArrived := func(c <-chan struct{}) {
		b.Helper()
		select {
		case <-c:
		case <-e.ctx.Done():
			mu.Lock()
			defer mu.Unlock()
			b.Fatalf("%d model requests of %d arrived", len(arrived), want)
		}
	}
	release := func() {
		mu.Lock()
		defer mu.Unlock()
		close(gate)
		gate = make(chan struct{})
	}

	// New threads, their model streams held open.
	runtime.GC()
	before := liveMemory(b)
	var threads []burstThread
	all := expect(firstRequestThreads)
	sentAt := time.Now()
	for j := range firstRequestThreads {
		ch := fmt.Sprintf("C0F%03d", j)
		threads = append(threads, burstThread{ch, e.slack.Mention(ch, aliceID, burstText("new", j), "")})
	}
	waitArrived(all)
	runtime.GC()
	held := liveMemory(b)
	b.ReportMetric(float64(held.rss-before.rss)/(1<<20), "rss-MiB/100-threads")
	b.ReportMetric(float64(held.heap-before.heap)/(1<<20), "heap-MiB/100-threads")
	b.ReportMetric(float64(held.children-before.children)/(1<<20), "children-pss-MiB/100-threads")
	release()
	for j, th := range threads {
		e.waitText(th.channel, th.root, "answered "+burstTag(burstText("new", j)))
	}
	roots := make([]string, len(threads))
	for j, th := range threads {
		roots[j] = th.root
	}
	reportFirstRequest(b, e, "new", threads, roots, sentAt, arrived, &mu)

	// The same threads after a restart: each session is resumed from the store.
	e.stop()
	e.start()
	all = expect(2 * firstRequestThreads)
	sentAt = time.Now()
	again := make([]string, len(threads))
	for j, th := range threads {
		again[j] = e.slack.Mention(th.channel, aliceID, burstText("resumed", j), th.root)
	}
	waitArrived(all)
	release()
	for j, th := range threads {
		e.waitText(th.channel, th.root, "answered "+burstTag(burstText("resumed", j)))
	}
	reportFirstRequest(b, e, "resumed", threads, again, sentAt, arrived, &mu)
	e.stop()
}

// burstText is the mention of thread j in a phase; burstTag finds its tag in
// a prompt.
func burstText(phase string, j int) string { return fmt.Sprintf("please start [%s-%03d]", phase, j) }

func burstTag(prompt string) string {
	i := strings.LastIndex(prompt, "[")
	k := strings.LastIndex(prompt, "]")
	if i < 0 || k < i {
		return ""
	}
	return prompt[i+1 : k]
}

// reportFirstRequest reports, for the mentions of one phase (mention[j] in
// threads[j], sent after since), the p50 and p99 from each mention's
// envelope to its ack, to the thread's first post after it and to its first
// model request.
func reportFirstRequest(b *testing.B, e *slackEnv, phase string, threads []burstThread, mention []string, since time.Time, arrived map[string]time.Time, mu *sync.Mutex) {
	b.Helper()
	acks := map[string]time.Duration{}
	for _, a := range e.slack.Acks() {
		acks[a.DeliveryID] = a.Latency
	}
	posts := e.slack.CallsTo("chat.postMessage")
	var ack, post, req []time.Duration
	mu.Lock()
	defer mu.Unlock()
	for j, th := range threads {
		var sent time.Time
		var id string
		for _, d := range e.slack.DeliveriesFor(th.channel, mention[j]) {
			if d.EventType == "app_mention" && !d.Sent.Before(since) {
				sent, id = d.Sent, d.ID
				break
			}
		}
		if sent.IsZero() {
			b.Fatalf("%s thread %d: no mention delivered", phase, j)
		}
		ack = append(ack, acks[id])
		for _, c := range posts {
			if c.Params.Get("thread_ts") == th.root && c.Error == "" && c.Time.After(sent) {
				post = append(post, c.Time.Sub(sent))
				break
			}
		}
		at, ok := arrived[burstTag(burstText(phase, j))]
		if !ok {
			var tags []string
			for t := range arrived {
				tags = append(tags, t)
			}
			slices.Sort(tags)
			b.Fatalf("%s thread %d: no model request; requests for %q", phase, j, tags)
		}
		req = append(req, at.Sub(sent))
	}
	for _, f := range []struct {
		name string
		ds   []time.Duration
	}{{"ack", ack}, {"post", post}, {"request", req}} {
		if len(f.ds) == 0 {
			continue
		}
		slices.Sort(f.ds)
		b.ReportMetric(ms(f.ds[len(f.ds)/2]), phase+"-p50-"+f.name+"-ms")
		b.ReportMetric(ms(f.ds[len(f.ds)*99/100]), phase+"-p99-"+f.name+"-ms")
	}
}

// memUse is what the process holds: its VmRSS, the Go heap in use, and the
// summed PSS of its descendant processes.
type memUse struct{ rss, heap, children int64 }

func liveMemory(b *testing.B) memUse {
	b.Helper()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return memUse{rss: vmRSS(b), heap: int64(ms.HeapInuse), children: descendantsPSS(os.Getpid())}
}

// descendantsPSS sums the proportional set size of every process below pid
// (read from /proc; processes that exit meanwhile are skipped): the pages
// they share, with each other (the bot's own binary re-executed as each
// sandbox's init) or with the bot, count once in all.
func descendantsPSS(pid int) int64 {
	dirs, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	for _, d := range dirs {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + d.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so read after its ')'.
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 {
			parent[p], _ = strconv.Atoi(fields[1])
		}
	}
	under := func(p int) bool {
		for i := 0; i < 64 && p > 1; i++ {
			if p = parent[p]; p == pid {
				return true
			}
		}
		return false
	}
	var total int64
	for p := range parent {
		if !under(p) {
			continue
		}
		rollup, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", p))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(rollup), "\n") {
			if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				total += kb << 10
			}
		}
	}
	return total
}
