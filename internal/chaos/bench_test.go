package chaos

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// burstSize is how many mentions one op of BenchmarkAnsweredMentions raises.
const burstSize = 100

// BenchmarkAnsweredMentions raises bursts of 100 mentions, each in its own
// thread and channel (Slack's per-channel post budget stays out of it), and
// waits until every one is answered in Slack; the fake model answers at
// once. Replicas: 1 on SQLite (the embedded default), 1, 2 and 3 on one
// PostgreSQL database, each a process of the real bot, with the fake Slack
// spreading events over their connections. It reports answered mentions per
// second and mention → answer latency (p50, p99).
func BenchmarkAnsweredMentions(b *testing.B) {
	for _, c := range []struct {
		driver   string
		replicas int
	}{{"sqlite", 1}, {"postgres", 1}, {"postgres", 2}, {"postgres", 3}} {
		b.Run(fmt.Sprintf("%s-%d", c.driver, c.replicas), func(b *testing.B) {
			e := newEnv(b, setup{driver: c.driver, logLevel: "warn"})
			for range c.replicas {
				if err := e.addReplica().start(); err != nil {
					b.Fatal(err)
				}
			}
			// Warm up: the first thread clones the remote into the mirror.
			e.burst(b, "warm", 3*c.replicas)
			b.ResetTimer()
			var lat []time.Duration
			for i := range b.N {
				lat = append(lat, e.burst(b, strconv.Itoa(i), burstSize)...)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*burstSize)/b.Elapsed().Seconds(), "mentions/s")
			slices.Sort(lat)
			b.ReportMetric(ms(lat[len(lat)/2]), "p50-answer-ms")
			b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-answer-ms")
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// burst raises n mentions in new threads of their own channels and waits
// until each is answered; it returns the latencies, mention → answer post.
func (e *env) burst(tb testing.TB, name string, n int) []time.Duration {
	tb.Helper()
	raised := map[string]time.Time{} // thread root -> when the mention was raised
	for i := range n {
		ch := fmt.Sprintf("CB%s%04d", name, i)
		at := time.Now()
		root := e.slack.Mention(ch, aliceID, fmt.Sprintf("question %s/%d", name, i), "")
		raised[root] = at
	}
	var lat []time.Duration
	seen := 0
	ctx, cancel := context.WithTimeout(e.ctx, 5*time.Minute)
	defer cancel()
	for len(raised) > 0 {
		calls := e.slack.CallsTo("chat.postMessage")
		for _, c := range calls[seen:] {
			root := c.Params.Get("thread_ts")
			at, ok := raised[root]
			if ok && c.Error == "" && strings.Contains(c.Params.Get("text"), "ANS-") {
				lat = append(lat, c.Time.Sub(at))
				delete(raised, root)
			}
		}
		seen = len(calls)
		if len(raised) == 0 {
			break
		}
		if _, err := e.slack.WaitCalls(ctx, "chat.postMessage", seen+1); err != nil {
			tb.Fatalf("burst %s: %d of %d mentions not answered: %v", name, len(raised), n, err)
		}
	}
	return lat
}

// BenchmarkTakeover kills (-9) the replica that runs a thread, among 3 on
// PostgreSQL with a 2 s lease (renewed every 500 ms), and measures how long
// until another replica holds the thread (its lease's fence moved: ns/op
// and p50/p99) and until the thread shows the interrupted notice. Run it
// with -benchtime=20x for the percentiles to mean something.
func BenchmarkTakeover(b *testing.B) {
	e := newEnv(b, setup{hang: true, logLevel: "warn"})
	var rs []*replica
	for range 3 {
		r := e.addReplica()
		if err := r.start(); err != nil {
			b.Fatal(err)
		}
		rs = append(rs, r)
	}
	var taken, noticed []time.Duration
	b.StopTimer()
	b.ResetTimer()
	for i := range b.N {
		ch := fmt.Sprintf("CT%05d", i)
		reqs := len(e.llm.Requests())
		root := e.slack.Mention(ch, aliceID, "HANG on this", "")
		if _, err := e.llm.WaitRequests(e.ctx, reqs+1); err != nil {
			b.Fatal(err)
		}
		var owner string
		var fence int64
		err := e.poll("the run's lease", 30*time.Second, 5*time.Millisecond, func() (bool, error) {
			var err error
			owner, fence, err = e.runLease(ch, root)
			return err == nil, err
		})
		if err != nil {
			b.Fatal(err)
		}
		victim := replicaNamed(rs, owner)
		if victim == nil {
			b.Fatalf("lease owner %q is none of the replicas", owner)
		}
		b.StartTimer()
		at, err := victim.kill()
		if err != nil {
			b.Fatal(err)
		}
		err = e.poll("the takeover", 30*time.Second, 5*time.Millisecond, func() (bool, error) {
			now, err := e.leaseFence(ch, root)
			return now > fence, err
		})
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		taken = append(taken, time.Since(at))
		err = e.poll("the interrupted notice", 30*time.Second, 5*time.Millisecond, func() (bool, error) {
			for _, m := range e.slack.Messages(ch, root) {
				if noticeRE.MatchString(m.Text) {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			b.Fatal(err)
		}
		noticed = append(noticed, time.Since(at))
		if err := victim.start(); err != nil {
			b.Fatal(err)
		}
	}
	slices.Sort(taken)
	slices.Sort(noticed)
	b.ReportMetric(ms(taken[len(taken)/2]), "p50-takeover-ms")
	b.ReportMetric(ms(taken[len(taken)*99/100]), "p99-takeover-ms")
	b.ReportMetric(ms(noticed[len(noticed)/2]), "p50-notice-ms")
	b.ReportMetric(ms(noticed[len(noticed)*99/100]), "p99-notice-ms")
}
