package outbox_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/outbox"
)

func benchOutbox(b *testing.B, lim outbox.Limits) (*outbox.Outbox, *recorder) {
	b.Helper()
	r := newRecorder()
	o := outbox.New(r, outbox.Config{Limits: lim, Logger: slog.New(slog.DiscardHandler)})
	b.Cleanup(func() {
		// The benchmark measured Edit, not the platform: drop what is left.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		_ = o.Close(ctx)
	})
	return o, r
}

// BenchmarkEdit is the hot path a listener pays per streamed delta: the
// message's edit is waiting for its per-message window, so Edit only replaces
// the pending text.
func BenchmarkEdit(b *testing.B) {
	o, _ := benchOutbox(b, outbox.SlackLimits())
	m := o.Post(ref("C1", "t"), "working…", outbox.High, nil)
	if _, err := m.Wait(b.Context()); err != nil {
		b.Fatal(err)
	}
	texts := [2]string{"partial answer one", "partial answer two"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		o.Edit(m, texts[i&1], outbox.Low)
		i++
	}
}

// BenchmarkEditParallel is many threads streaming at once, each listener
// editing its own message.
func BenchmarkEditParallel(b *testing.B) {
	o, _ := benchOutbox(b, outbox.SlackLimits())
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		th := ref("C1", fmt.Sprint(n.Add(1)))
		m := o.Post(th, "working…", outbox.High, nil)
		for pb.Next() {
			o.Edit(m, "partial answer", outbox.Low)
		}
	})
}

// BenchmarkLongStream runs a long stream against the real clock, at 1/20 of
// real time (every budget and interval divided by 20, so 3 s stand for a
// minute): an edit requested every 1 ms (20 ms real) for 3 s (60 s real).
// It reports edits requested and sent per stream; TestLongStream measures
// the same at full scale in fake time.
func BenchmarkLongStream(b *testing.B) {
	const scale = 20
	div := func(r outbox.Rate) outbox.Rate { return outbox.Rate{Every: r.Every / scale, Burst: r.Burst} }
	slack := outbox.SlackLimits()
	for _, c := range []struct {
		name string
		lim  outbox.Limits
	}{
		{"slack", outbox.Limits{
			PostPerChannel:   div(slack.PostPerChannel),
			EditPerMessage:   div(slack.EditPerMessage),
			EditPerWorkspace: div(slack.EditPerWorkspace),
		}},
		{"per-message-only", outbox.Limits{EditPerMessage: div(slack.EditPerMessage)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var requested, sent int64
			deltas := make([]string, 64) // distinct texts: an edit to the text shown is skipped
			for i := range deltas {
				deltas[i] = fmt.Sprint("partial ", i)
			}
			for b.Loop() {
				r := newRecorder()
				o := outbox.New(r, outbox.Config{Limits: c.lim, Logger: slog.New(slog.DiscardHandler)})
				m := o.Post(ref("C1", "t"), "working…", outbox.High, nil)
				tick := time.NewTicker(20 * time.Millisecond / scale)
				for i, end := 0, time.Now().Add(time.Minute/scale); time.Now().Before(end); i++ {
					o.Edit(m, deltas[i%len(deltas)], outbox.Low)
					<-tick.C
				}
				tick.Stop()
				o.Edit(m, "final", outbox.High)
				if err := o.Close(b.Context()); err != nil {
					b.Fatal(err)
				}
				st := o.Stats()
				requested += st.EditsRequested
				sent += st.EditsSent
				if es := r.accepted("edit", nil); es[len(es)-1].Text != "final" {
					b.Fatalf("last edit %q, want final", es[len(es)-1].Text)
				}
			}
			b.ReportMetric(float64(requested)/float64(b.N), "requested/op")
			b.ReportMetric(float64(sent)/float64(b.N), "sent/op")
		})
	}
}
