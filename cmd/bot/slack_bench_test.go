package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
// For main it also reports mention → first post in the thread (p50, p99),
// from the delivery of the mention to the fake receiving the status message,
// and the process's VmRSS growth once 200 threads were answered. Each thread
// has its own channel, so Slack's per-channel post budget does not dominate
// the first post.
func BenchmarkSlackMentionBurst(b *testing.B) {
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
		var cpu time.Duration
		for i := range b.N {
			before := processCPU(b)
			threads = append(threads, mentionBurst(srv, i)...)
			if err := srv.WaitAllAcked(wctx); err != nil {
				b.Fatal(err)
			}
			cpu += processCPU(b) - before
		}
		b.StopTimer()
		reportAcks(b, srv, threads)
		b.ReportMetric(ms(cpu)/float64(b.N), "cpu-ms-to-acked")
	})
	b.Run("main", func(b *testing.B) {
		rssBefore := vmRSS(b)
		e := newSlackEnv(b, quietLogs())
		e.llm.Handle(func(r llmfake.Request) llmfake.Response { return llmfake.TextReply("answer to: " + lastUserText(r)) })
		b.ResetTimer()
		var threads []burstThread
		var cpu time.Duration
		for i := range b.N {
			stopProfile := profileBurst(b, i)
			before := processCPU(b)
			burst := mentionBurst(e.slack, i)
			threads = append(threads, burst...)
			if err := e.slack.WaitAllAcked(e.ctx); err != nil {
				b.Fatal(err)
			}
			cpu += processCPU(b) - before
			stopProfile()
			waitAnswered(b, e, burst)
		}
		b.StopTimer()
		reportAcks(b, e.slack, threads)
		b.ReportMetric(ms(cpu)/float64(b.N), "cpu-ms-to-acked")
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

// processCPU is the CPU time (user and system) this process has used so far:
// the benchmark's process runs the fakes too, which the floor shares.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
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
// (cpu.pprof-*, 100 Hz: merge several bursts' with go tool pprof), and with THREADSMITH_BURST_TRACE=1 an execution
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
