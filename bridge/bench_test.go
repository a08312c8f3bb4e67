package bridge

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/fakes/chatfake"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/outbox"
)

// timedChat is the chat fake that notes when each thread's first status
// message reaches the platform.
type timedChat struct {
	*chatfake.Adapter
	mu     sync.Mutex
	status map[string]chan time.Time
}

func (a *timedChat) statusPosted(th chat.ThreadRef) chan time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch := a.status[th.Key()]
	if ch == nil {
		ch = make(chan time.Time, 1)
		a.status[th.Key()] = ch
	}
	return ch
}

func (a *timedChat) Post(ctx context.Context, th chat.ThreadRef, text string) (string, error) {
	id, err := a.Adapter.Post(ctx, th, text)
	if err == nil && strings.HasPrefix(text, workingHeaderPrefix) {
		select {
		case a.statusPosted(th) <- time.Now():
		default: // a later run's status
		}
	}
	return id, err
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func reportLatencies(b *testing.B, ds []time.Duration) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(percentile(ds, 0.5)), "p50-ms")
	b.ReportMetric(ms(percentile(ds, 0.9)), "p90-ms")
	b.ReportMetric(ms(slices.Max(ds)), "max-ms")
	b.ReportMetric(0, "ns/op") // the latencies are the figures; the loop's time is not
}

// BenchmarkMentionToFirstStatus measures, in process, the time from Receive
// of a mention in a new thread to the platform's Post of its status message
// ("working…"): storage commit, routing, the thread's owner, the outbox. The
// LLM is not on this path (the status goes out before the workspace and the
// model). sequential: 20 new threads one at a time (each run finishes before
// the next mention); burst50: 50 new threads mentioned at once. Run with
// -benchtime=5x (each iteration is 20 or 50 threads).
func BenchmarkMentionToFirstStatus(b *testing.B) {
	setup := func(b *testing.B) (*rig, *timedChat) {
		var tc *timedChat
		r := newRig(b, func(_ *Config, p *Platform) {
			tc = &timedChat{Adapter: p.Adapter.(*chatfake.Adapter), status: map[string]chan time.Time{}}
			p.Adapter = tc
		})
		r.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("ok") })
		return r, tc
	}
	mention := func(r *rig, th chat.ThreadRef) time.Time {
		start := time.Now()
		r.say(th, alice, "hello", true)
		return start
	}
	b.Run("sequential", func(b *testing.B) {
		const threads = 20
		r, tc := setup(b)
		var lat []time.Duration
		round := 0
		for b.Loop() {
			round++
			for i := range threads {
				th := chat.ThreadRef{Platform: "test", Team: "T1", Channel: "C1", Thread: fmt.Sprintf("%d.%d", round, i)}
				start := mention(r, th)
				lat = append(lat, (<-tc.statusPosted(th)).Sub(start))
				b.StopTimer()
				r.waitRuns(th, 1)
				b.StartTimer()
			}
		}
		reportLatencies(b, lat)
	})
	b.Run("burst50", func(b *testing.B) {
		const threads = 50
		r, tc := setup(b)
		var lat []time.Duration
		round := 0
		for b.Loop() {
			round++
			refs := make([]chat.ThreadRef, threads)
			starts := make([]time.Time, threads)
			for i := range refs {
				refs[i] = chat.ThreadRef{Platform: "test", Team: "T1", Channel: fmt.Sprintf("C%d", i), Thread: fmt.Sprintf("%d.1", round)}
				starts[i] = mention(r, refs[i])
			}
			for i, th := range refs {
				lat = append(lat, (<-tc.statusPosted(th)).Sub(starts[i]))
			}
			b.StopTimer()
			for _, th := range refs {
				r.waitRuns(th, 1)
			}
			b.StartTimer()
		}
		reportLatencies(b, lat)
	})
}

// cannedModel answers every request at once with a short text, in process,
// so that the memory figures hold the bridge's own and not an LLM server's
// record of requests.
type cannedModel struct{}

func (cannedModel) Stream(_ context.Context, _ llm.Request, fn llm.StreamFunc) (llm.Message, error) {
	m := llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("ok")}, StopReason: llm.StopReasonStop,
		Usage: &llm.Usage{Input: 10, Output: 1}}
	fn(llm.Delta{Kind: llm.DeltaText, Text: "ok"}, &m)
	return m, nil
}

func heapAlloc() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkIdleThreadMemory measures the heap a thread keeps after one
// short run: "live" while its owner is still in memory (idle, not evicted
// yet), "evicted" once IdleEvict dropped it. Both include the chat fake's
// copy of the thread's four messages. Each iteration creates 200 threads
// (-benchtime=1x is enough).
func BenchmarkIdleThreadMemory(b *testing.B) {
	const threads = 200
	measure := func(b *testing.B, evict time.Duration, waitEvicted bool) {
		r := newRig(b, func(c *Config, _ *Platform) {
			c.Model = cannedModel{}
			c.IdleEvict = evict
			c.MaxConcurrentRuns = 8
		})
		// A warm-up thread creates the mirror and fills the caches first.
		warm := chat.ThreadRef{Platform: "test", Team: "T1", Channel: "W", Thread: "0.1"}
		r.say(warm, alice, "hello", true)
		r.waitRuns(warm, 1)
		var grown int64
		round := 0
		for b.Loop() {
			round++
			if waitEvicted {
				r.waitUntil("the earlier threads are evicted", func() bool { return r.liveCount() == 0 })
			}
			r.flush()
			before := heapAlloc()
			refs := make([]chat.ThreadRef, threads)
			for i := range refs {
				refs[i] = chat.ThreadRef{Platform: "test", Team: "T1", Channel: fmt.Sprintf("C%d", i), Thread: fmt.Sprintf("%d.1", round)}
				r.say(refs[i], alice, "hello", true)
			}
			for _, th := range refs {
				r.waitRuns(th, 1)
			}
			if waitEvicted {
				r.waitUntil("every thread is evicted", func() bool { return r.liveCount() == 0 })
			} else if n := r.liveCount(); n < round*threads {
				b.Fatalf("only %d threads are live: raise IdleEvict", n)
			}
			r.flush()
			grown += int64(heapAlloc()) - int64(before)
		}
		b.ReportMetric(float64(grown)/float64(round*threads), "heap-B/thread")
		b.ReportMetric(0, "ns/op")
	}
	b.Run("live", func(b *testing.B) { measure(b, time.Hour, false) })
	b.Run("evicted", func(b *testing.B) { measure(b, 20*time.Millisecond, true) })
}

func (r *rig) liveCount() int {
	r.b.mu.Lock()
	defer r.b.mu.Unlock()
	return len(r.b.threads)
}

// BenchmarkStreamEdits streams a 2,000-delta reply through the view into the
// outbox and counts edits: the naive baseline (one edit per delta), what the
// view requests (it re-renders at most every 250 ms of stream time), and what
// the outbox sends to the platform under Slack's per-message budget (1 edit/s).
//
// The stream is a 50-second reply (a delta every 25 ms) played 20× faster:
// the view's clock moves 25 ms per delta, deltas are paced 1.25 ms apart on
// the wall clock, and the outbox's budget is one edit per 50 ms of wall time
// (1/s of stream time). Run with -benchtime=1x (about 3 s).
func BenchmarkStreamEdits(b *testing.B) {
	const (
		deltas = 2000
		every  = 25 * time.Millisecond // stream time between deltas
		scale  = 20
	)
	for b.Loop() {
		b.StopTimer()
		limits := outbox.Limits{EditPerMessage: outbox.Rate{Every: time.Second / scale, Burst: 1}}
		r := newViewRigWith(b, 3500, outbox.Config{Limits: limits})
		r.start("write a long answer")
		r.play(agent.TurnStart{}, agent.MessageStart{Message: llm.Message{Role: llm.RoleAssistant}})
		before := r.out.Stats()
		b.StartTimer()
		var text strings.Builder
		start := time.Now()
		pace := time.NewTimer(0)
		for i := range deltas {
			// Pace without drift: wait for this delta's wall time, if ahead.
			if wait := time.Duration(i)*every/scale - time.Since(start); wait > 0 {
				pace.Reset(wait)
				<-pace.C
			}
			d := fmt.Sprintf("w%d ", i%10)
			text.WriteString(d)
			r.clock.Advance(every)
			r.play(agent.MessageUpdate{Delta: llm.Delta{Kind: llm.DeltaText, Text: d}})
		}
		b.StopTimer()
		pace.Stop()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := r.out.Flush(ctx); err != nil {
			b.Fatal(err)
		}
		cancel()
		b.ReportMetric(float64(time.Since(start).Milliseconds())*scale/1000, "stream-s")
		st := r.out.Stats()
		// The preview outgrows one message: it continues in more.
		msgs := r.chat.Messages(r.ref)
		edits := 0
		for _, m := range msgs {
			edits += m.Edits
		}
		// The reply ends: the answer is posted whole.
		r.play(agent.MessageEnd{Message: textReply(text.String(), usage(10, deltas))})
		r.end(10+deltas, 128000, false)
		var answer []string
		for _, m := range r.messages()[len(msgs):] {
			answer = append(answer, strings.Fields(m.Text)...)
		}
		if got, want := strings.Join(answer, " "), strings.Join(strings.Fields(text.String()), " "); !strings.HasPrefix(got, want) {
			b.Fatalf("the posted answer is not the streamed text")
		}
		b.ReportMetric(deltas, "deltas")
		b.ReportMetric(float64(st.EditsRequested-before.EditsRequested), "edits-requested")
		b.ReportMetric(float64(st.EditsSent-before.EditsSent), "edits-sent")
		b.ReportMetric(float64(edits), "platform-edits")
		b.ReportMetric(float64(len(msgs)), "messages")
		b.ReportMetric(0, "ns/op")
		b.StartTimer()
	}
}
