package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// BenchmarkSlackCallsPerAnsweredMention counts the Slack Web API calls the
// program makes for one mention answered after one tool call (status post,
// its edits, the answer, the push notice, the assistant status), with the
// default Slack budgets, in one channel. Each op waits until the outbox has
// sent everything, so late calls are counted with their mention.
func BenchmarkSlackCallsPerAnsweredMention(b *testing.B) {
	e := newSlackEnv(b, quietLogs())
	var mu sync.Mutex
	file := 0
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		if r.LastMessage().Role == "tool" {
			return llmfake.TextReply("Done: I wrote the file.")
		}
		mu.Lock()
		file++
		n := file
		mu.Unlock()
		return llmfake.ToolCallReply(llmfake.Call{ID: "c1", Name: "write", Args: fmt.Sprintf(`{"path":"f%d.txt","content":"x\n"}`, n)})
	})
	byMethod := map[string]int{}
	b.ResetTimer()
	for i := range b.N {
		before := len(e.slack.Calls())
		root := e.slack.Mention(slackChan, aliceID, fmt.Sprintf("write file %d", i), "")
		e.waitText(slackChan, root, "⏱")
		if err := e.m.Outboxes["slack"].Flush(e.ctx); err != nil {
			b.Fatal(err)
		}
		for _, c := range e.slack.Calls()[before:] {
			byMethod[c.Method]++
		}
	}
	b.StopTimer()
	total := 0
	for m, n := range byMethod {
		total += n
		b.ReportMetric(float64(n)/float64(b.N), m+"/op")
	}
	b.ReportMetric(float64(total)/float64(b.N), "calls/op")
}

// BenchmarkSlackMentionBurst raises bursts of 200 mentions in 200 threads (400
// envelopes: app_mention and message) and measures, from the fake writing an
// envelope to reading its ack:
//
//   - floor: a bare slack-go Socket Mode client that acks every envelope as it
//     arrives, the transport's own cost, measured in the same run;
//   - main: the program (Main on the fake Slack, the fake LLM, a bare git
//     remote and SQLite), which acks once the input is stored, while it also
//     runs the 200 sessions the burst started.
//
// main runs first: with -count=N its first run is the process's first burst,
// as a bot meets its first burst cold (the collector's small starting heap,
// first uses), and its later runs are warm; report the first apart. The
// floor runs after it.
//
// Both report, over the window from the first mention to the last ack, the
// process's CPU, the collections and their CPU, and minor page faults
// (burstWindow); main also the Web API calls made in that window (threads
// that started before the burst was acked).
//
// For main it also reports mention → first post in the thread (p50, p99),
// from the delivery of the mention to the fake receiving the status message,
// and the process's VmRSS growth once 200 threads were answered. Each thread
// has its own channel, so Slack's per-channel post budget does not dominate
// the first post.
func BenchmarkSlackMentionBurst(b *testing.B) {
	b.Run("main", func(b *testing.B) {
		rssBefore := vmRSS(b)
		e := newSlackEnv(b, quietLogs())
		e.llm.Handle(func(r llmfake.Request) llmfake.Response { return llmfake.TextReply("answer to: " + lastUserText(r)) })
		b.ResetTimer()
		var threads []burstThread
		var w burstWindow
		for i := range b.N {
			stopProfile := profileBurst(b, i)
			w.start(b)
			burst := mentionBurst(e.slack, i)
			threads = append(threads, burst...)
			if err := e.slack.WaitAllAcked(e.ctx); err != nil {
				b.Fatal(err)
			}
			w.stop(b)
			stopProfile()
			waitAnswered(b, e, burst)
		}
		b.StopTimer()
		reportAcks(b, e.slack, threads)
		w.report(b)
		b.ReportMetric(float64(callsBeforeLastAck(e.slack, threads))/float64(b.N), "webapi-calls-to-acked")
		var first []time.Duration
		for _, th := range threads {
			post, ok := e.firstPostIn(th.root)
			ds := e.slack.DeliveriesFor(th.channel, th.root)
			if !ok || len(ds) == 0 {
				b.Fatalf("thread %s: no post or no delivery", th.root)
			}
			first = append(first, post.Time.Sub(ds[0].Sent))
		}
		slices.Sort(first)
		b.ReportMetric(ms(first[len(first)/2]), "p50-first-post-ms")
		b.ReportMetric(ms(first[len(first)*99/100]), "p99-first-post-ms")
		b.ReportMetric(float64(vmRSS(b)-rssBefore)/(1<<20), "rss-growth-MiB")
		b.ReportMetric(float64(vmRSS(b))/(1<<20), "rss-MiB")
	})
	b.Run("floor", func(b *testing.B) {
		srv := slackfake.New(b, slackfake.WithoutBotEcho())
		slackfake.StartAckingClient(b, srv)
		wctx, stop := context.WithTimeout(context.Background(), 5*time.Minute)
		defer stop()
		if err := srv.WaitConnections(wctx, 1); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		var threads []burstThread
		var w burstWindow
		for i := range b.N {
			w.start(b)
			threads = append(threads, mentionBurst(srv, i)...)
			if err := srv.WaitAllAcked(wctx); err != nil {
				b.Fatal(err)
			}
			w.stop(b)
		}
		b.StopTimer()
		reportAcks(b, srv, threads)
		w.report(b)
	})
}

// burstThread is one thread a burst opened.
type burstThread struct{ channel, root string }

// mentionBurst mentions the bot in 200 new threads, each in its own channel.
func mentionBurst(srv *slackfake.Server, burst int) []burstThread {
	out := make([]burstThread, 0, 200)
	for j := range 200 {
		ch := fmt.Sprintf("C0B%03d%03d", burst%1000, j)
		out = append(out, burstThread{ch, srv.Mention(ch, aliceID, fmt.Sprintf("burst %d thread %d", burst, j), "")})
	}
	return out
}

// waitAnswered waits until every thread of the burst has its footer.
func waitAnswered(b *testing.B, e *slackEnv, threads []burstThread) {
	b.Helper()
	want := map[string]bool{}
	for _, th := range threads {
		want[th.root] = true
	}
	for seen := 0; len(want) > 0; {
		posts, err := e.slack.WaitCalls(e.ctx, "chat.postMessage", seen+1)
		if err != nil {
			b.Fatalf("%d threads unanswered: %v", len(want), err)
		}
		for _, c := range posts[seen:] {
			if strings.Contains(c.Params.Get("text"), "⏱") {
				delete(want, c.Params.Get("thread_ts"))
			}
		}
		seen = len(posts)
	}
}

// reportAcks reports the ack latency percentiles of the mentions' deliveries.
func reportAcks(b *testing.B, srv *slackfake.Server, threads []burstThread) {
	mentioned := map[string]bool{}
	for _, th := range threads {
		mentioned[th.root] = true
	}
	ofMention := map[string]bool{}
	for _, d := range srv.Deliveries() {
		if mentioned[d.TS] && (d.EventType == "app_mention" || d.EventType == "message") {
			ofMention[d.ID] = true
		}
	}
	var lat []time.Duration
	for _, a := range srv.Acks() {
		if ofMention[a.DeliveryID] {
			lat = append(lat, a.Latency)
		}
	}
	if len(lat) == 0 {
		b.Fatal("no acks")
	}
	slices.Sort(lat)
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ack-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ack-ms")
	b.ReportMetric(float64(len(lat))/float64(b.N), "acks/op")
}

// callsBeforeLastAck counts the Web API calls (status posts, edits, the
// threads' other calls) that arrived before each burst's last ack: work of
// sessions the burst started that ran while its acks were still pending.
func callsBeforeLastAck(srv *slackfake.Server, threads []burstThread) int {
	burstOf := map[string]int{}
	for i, th := range threads {
		burstOf[th.root] = i / 200
	}
	ofBurst := map[string]int{}
	for _, d := range srv.Deliveries() {
		if k, ok := burstOf[d.TS]; ok {
			ofBurst[d.ID] = k
		}
	}
	first := map[int]time.Time{}
	last := map[int]time.Time{}
	for _, d := range srv.Deliveries() {
		if k, ok := ofBurst[d.ID]; ok && (first[k].IsZero() || d.Sent.Before(first[k])) {
			first[k] = d.Sent
		}
	}
	for _, a := range srv.Acks() {
		if k, ok := ofBurst[a.DeliveryID]; ok && a.Received.After(last[k]) {
			last[k] = a.Received
		}
	}
	n := 0
	for _, c := range srv.Calls() {
		for k := range last {
			if !c.Time.Before(first[k]) && !c.Time.After(last[k]) {
				n++
			}
		}
	}
	return n
}

// burstWindow sums, over the bursts' windows (first mention → last ack),
// what the process spent: CPU time (getrusage, user + system), the GC cycles
// that ran and the runtime's estimate of their CPU (mark assists apart),
// and minor page faults (fresh heap memory). Read with the GC figures, a
// window's CPU tells whether a first burst costs more for the collector
// (a small heap at start: a cycle every few MB) or for the program's own
// first-use work.
type burstWindow struct {
	n                           int
	wall, cpu, gcCPU, assistCPU time.Duration
	began                       time.Time
	gcs, minflt, goalAtStart    float64
	ru                          syscall.Rusage
	m                           []metrics.Sample
}

var burstMetrics = []string{"/gc/cycles/total:gc-cycles", "/cpu/classes/gc/total:cpu-seconds", "/cpu/classes/gc/mark/assist:cpu-seconds", "/gc/heap/goal:bytes"}

func (w *burstWindow) read(b *testing.B) (syscall.Rusage, []metrics.Sample) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	m := make([]metrics.Sample, len(burstMetrics))
	for i, name := range burstMetrics {
		m[i].Name = name
	}
	metrics.Read(m)
	return ru, m
}

func (w *burstWindow) start(b *testing.B) { w.ru, w.m = w.read(b); w.began = time.Now() }

func (w *burstWindow) stop(b *testing.B) {
	w.wall += time.Since(w.began)
	ru, m := w.read(b)
	w.n++
	w.cpu += time.Duration(ru.Utime.Nano() + ru.Stime.Nano() - w.ru.Utime.Nano() - w.ru.Stime.Nano())
	w.minflt += float64(ru.Minflt - w.ru.Minflt)
	w.gcs += float64(m[0].Value.Uint64() - w.m[0].Value.Uint64())
	w.gcCPU += time.Duration((m[1].Value.Float64() - w.m[1].Value.Float64()) * float64(time.Second))
	w.assistCPU += time.Duration((m[2].Value.Float64() - w.m[2].Value.Float64()) * float64(time.Second))
	w.goalAtStart += float64(w.m[3].Value.Uint64()) / (1 << 20)
}

func (w *burstWindow) report(b *testing.B) {
	n := float64(w.n)
	b.ReportMetric(ms(w.wall)/n, "ms-to-acked")
	b.ReportMetric(ms(w.cpu)/n, "cpu-ms-to-acked")
	b.ReportMetric(w.gcs/n, "gc-cycles-to-acked")
	b.ReportMetric(ms(w.gcCPU)/n, "gc-cpu-ms-to-acked")
	b.ReportMetric(ms(w.assistCPU)/n, "gc-assist-ms-to-acked")
	b.ReportMetric(w.minflt/n, "minflt-to-acked")
	b.ReportMetric(w.goalAtStart/n, "heap-goal-MiB-at-burst")
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// vmRSS reads this process's resident set size from /proc/self/status.
func vmRSS(b *testing.B) int64 {
	b.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc/self/status: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				b.Fatalf("VmRSS line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return 0
}

// profileBurst profiles the program from the burst's first mention until
// its last ack when THREADSMITH_BURST_PROFILE names a folder: a CPU profile
// (cpu.pprof-*, 100 Hz or THREADSMITH_BURST_PROFILE_HZ: merge several bursts' with go tool pprof), and with THREADSMITH_BURST_TRACE=1 an execution
// trace (trace.out-*, for go tool trace). It returns the function ending it.
func profileBurst(b *testing.B, burst int) func() {
	dir := os.Getenv("THREADSMITH_BURST_PROFILE")
	if dir == "" {
		return func() {}
	}
	create := func(name string) *os.File {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("%s-%d-%d", name, time.Now().UnixNano(), burst)))
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	cpu := create("cpu.pprof")
	if hz, err := strconv.Atoi(os.Getenv("THREADSMITH_BURST_PROFILE_HZ")); err == nil && hz > 0 {
		runtime.SetCPUProfileRate(hz) // StartCPUProfile keeps it (and says so on stderr)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		b.Fatal(err)
	}
	var tr *os.File
	if os.Getenv("THREADSMITH_BURST_TRACE") != "" {
		tr = create("trace.out")
		if err := trace.Start(tr); err != nil {
			b.Fatal(err)
		}
	}
	return func() {
		pprof.StopCPUProfile()
		cpu.Close()
		if tr != nil {
			trace.Stop()
			tr.Close()
		}
	}
}
