package outbox_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/outbox"
)

func texts(cs []call) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Kind + ":" + c.Text
	}
	return out
}

func inThread(th chat.ThreadRef) func(call) bool {
	return func(c call) bool { return c.Thread == th }
}

func TestThreadOrderAndParallelThreads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.latency = 100 * time.Millisecond
		o := start(t, r, outbox.Config{Workers: 4})
		a, b := ref("C1", "a"), ref("C2", "b")

		first := o.Post(a, "a1", outbox.Normal, nil)
		synctest.Wait()                        // a1 is on the wire
		o.Edit(first, "a1 edited", outbox.Low) // must wait for a1's id
		o.Post(a, "a2", outbox.High, nil)
		o.Upload(a, "diff.patch", []byte("+x"), "a3")
		o.Post(a, "a4", outbox.Low, nil)
		o.Post(b, "b1", outbox.Normal, nil)
		o.Post(b, "b2", outbox.Normal, nil)
		second := o.Post(a, "a5", outbox.Normal, nil)
		if _, err := second.Wait(t.Context()); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		o.Edit(first, "a1 final", outbox.High)
		flush(t, o)

		lane := r.accepted("", func(c call) bool { return c.Thread == a && c.Kind != "edit" })
		if got, want := texts(lane), []string{"post:a1", "post:a2", "upload:a3", "post:a4", "post:a5"}; !slices.Equal(got, want) {
			t.Errorf("thread a posts and uploads: got %q, want %q", got, want)
		}
		edits := r.accepted("edit", nil)
		if len(edits) == 0 || edits[len(edits)-1].Text != "a1 final" {
			t.Errorf("edits: got %q, want the last one to be %q", texts(edits), "a1 final")
		}
		for _, e := range edits {
			if e.ID != lane[0].ID || e.At.Before(lane[0].At) {
				t.Errorf("edit %+v: want it to edit %s after its post at %v", e, lane[0].ID, lane[0].At)
			}
		}
		if got := texts(r.accepted("", inThread(b))); !slices.Equal(got, []string{"post:b1", "post:b2"}) {
			t.Errorf("thread b calls: got %q, want [post:b1 post:b2]", got)
		}
		if st := o.Stats(); st.Failures != 0 {
			t.Errorf("failures: got %d, want 0", st.Failures)
		}
		if ov := r.overlapping(); len(ov) > 0 {
			t.Errorf("calls started while another call of their thread was in flight: %+v", ov)
		}
		aCalls, bCalls := r.accepted("", inThread(a)), r.accepted("", inThread(b))
		if !bCalls[0].At.Before(aCalls[len(aCalls)-1].At) {
			t.Errorf("thread b's first call at %v, thread a's last at %v: want the threads to proceed in parallel",
				bCalls[0].At, aCalls[len(aCalls)-1].At)
		}
	})
}

func TestEditsCoalesce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		o := start(t, r, outbox.Config{Limits: outbox.SlackLimits()})
		th := ref("C1", "t")
		m := o.Post(th, "working…", outbox.High, nil)
		if _, err := m.Wait(t.Context()); err != nil {
			t.Fatalf("Wait: %v", err)
		}
		const n = 1000
		for i := range n {
			o.Edit(m, fmt.Sprintf("v%d", i), outbox.Low)
			time.Sleep(10 * time.Millisecond)
		}
		flush(t, o)

		edits := r.accepted("edit", nil)
		if len(edits) < 9 || len(edits) > 12 {
			t.Errorf("edits sent for %d requests over 10 s: got %d, want about 10 (one per second)", n, len(edits))
		}
		if got, want := edits[len(edits)-1].Text, fmt.Sprintf("v%d", n-1); got != want {
			t.Errorf("last edit: got %q, want %q", got, want)
		}
		checkSpacing(t, "edits of one message", times(edits), time.Second)
		st := o.Stats()
		if st.EditsRequested != n || st.EditsSent != int64(len(edits)) {
			t.Errorf("stats: got %d requested, %d sent; want %d requested, %d sent", st.EditsRequested, st.EditsSent, n, len(edits))
		}
	})
}

// stream edits m with a growing text every tick until d has passed, then
// sends the final text at High.
func stream(o *outbox.Outbox, m *outbox.Message, name string, tick, d time.Duration) {
	var sb strings.Builder
	for end := time.Now().Add(d); time.Now().Before(end); {
		sb.WriteString("x")
		o.Edit(m, name+" "+sb.String(), outbox.Low)
		time.Sleep(tick)
	}
	o.Edit(m, name+" final", outbox.High)
}

func TestSlackBudgetsWithFiftyThreads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.latency = 30 * time.Millisecond
		lim := outbox.SlackLimits()
		o := start(t, r, outbox.Config{Limits: lim})
		const threads = 50
		t0 := time.Now()
		done := make(chan struct{})
		for i := range threads {
			go func() {
				defer func() { done <- struct{}{} }()
				th := ref(fmt.Sprintf("C%d", i%5), fmt.Sprintf("t%d", i))
				m := o.Post(th, "working…", outbox.Normal, nil)
				stream(o, m, fmt.Sprintf("t%d", i), 50*time.Millisecond, 60*time.Second)
				o.Post(th, fmt.Sprintf("t%d answer", i), outbox.High, nil)
			}()
		}
		for range threads {
			<-done
		}
		flush(t, o)
		t.Logf("all delivered %v after the start; stats %+v", time.Since(t0), o.Stats())

		edits := r.accepted("edit", nil)
		checkWindow(t, "chat.update across the workspace", times(edits), 50, time.Minute)
		checkBucket(t, "chat.update across the workspace", times(edits), lim.EditPerWorkspace.Every, lim.EditPerWorkspace.Burst)
		byMsg := map[string][]call{}
		for _, e := range edits {
			byMsg[e.ID] = append(byMsg[e.ID], e)
		}
		for id, es := range byMsg {
			checkSpacing(t, "chat.update of "+id, times(es), time.Second)
		}
		for c := range 5 {
			ch := fmt.Sprintf("C%d", c)
			posts := r.accepted("post", func(x call) bool { return x.Thread.Channel == ch })
			checkBucket(t, "chat.postMessage in "+ch, times(posts), time.Second, 5)
		}
		for i := range threads {
			th := ref(fmt.Sprintf("C%d", i%5), fmt.Sprintf("t%d", i))
			calls := r.accepted("", inThread(th))
			status := calls[0]
			var last string
			for _, c := range calls {
				if c.Kind == "edit" && c.ID == status.ID {
					last = c.Text
				}
			}
			if want := fmt.Sprintf("t%d final", i); last != want {
				t.Errorf("thread %d: status message last edited to %q, want %q", i, last, want)
			}
			answer := fmt.Sprintf("t%d answer", i)
			if !slices.ContainsFunc(calls, func(c call) bool { return c.Kind == "post" && c.Text == answer }) {
				t.Errorf("thread %d: calls %q, want the answer post %q", i, texts(calls), answer)
			}
		}
		if st := o.Stats(); st.RateLimited != 0 || st.Failures != 0 {
			t.Errorf("stats: got %d rate limited, %d failures; want none", st.RateLimited, st.Failures)
		}
	})
}

func TestDiscordEditBudgetPerChannel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.latency = 20 * time.Millisecond
		lim := outbox.DiscordLimits()
		o := start(t, r, outbox.Config{Limits: lim})
		const threads, perThread = 6, 3
		done := make(chan struct{})
		for i := range threads {
			th := ref(fmt.Sprintf("D%d", i), fmt.Sprintf("D%d", i)) // a Discord thread is its own channel
			for j := range perThread {
				go func() {
					defer func() { done <- struct{}{} }()
					name := fmt.Sprintf("t%d.%d", i, j)
					m := o.Post(th, name, outbox.Normal, nil)
					stream(o, m, name, 30*time.Millisecond, 20*time.Second)
				}()
			}
		}
		for range threads * perThread {
			<-done
		}
		flush(t, o)

		edits := r.accepted("edit", nil)
		for i := range threads {
			ch := fmt.Sprintf("D%d", i)
			var ts []time.Time
			for _, e := range edits {
				if e.Thread.Channel == ch {
					ts = append(ts, e.At)
				}
			}
			checkWindow(t, "message edits in "+ch, ts, 5, 5*time.Second)
			posts := r.accepted("post", func(c call) bool { return c.Thread.Channel == ch })
			checkWindow(t, "messages in "+ch, times(posts), 5, 5*time.Second)
		}
		checkWindow(t, "all requests", times(r.all()), 50, time.Second)
		final := map[string]string{}
		for _, e := range edits {
			final[e.ID] = e.Text
		}
		for _, p := range r.accepted("post", nil) {
			// The post may carry a streamed text merged into it before it went out.
			if got, want := final[p.ID], strings.Fields(p.Text)[0]+" final"; got != want {
				t.Errorf("message %s last edited to %q, want %q", p.ID, got, want)
			}
		}
	})
}

func TestRateLimitPausesScopeAndRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		o := start(t, r, outbox.Config{Limits: outbox.SlackLimits()})
		a, b := ref("C1", "a"), ref("C2", "b")
		ma, mb := o.Post(a, "a", outbox.Normal, nil), o.Post(b, "b", outbox.Normal, nil)
		flush(t, o)
		idA := ma.ID()

		refused := false
		r.setFail(func(c call) error {
			if c.Kind == "edit" && c.ID == idA && !refused {
				refused = true
				return &chat.RateLimitError{RetryAfter: 5 * time.Second}
			}
			return nil
		})
		t0 := time.Now()
		o.Edit(ma, "a edited", outbox.High)
		synctest.Wait() // refused by now
		time.Sleep(100 * time.Millisecond)
		o.Edit(ma, "a edited again", outbox.Low) // merges into the refused edit
		o.Edit(mb, "b edited", outbox.High)      // same workspace budget: paused too
		o.Post(b, "b2", outbox.Normal, nil)      // posts are another scope: not paused
		o.React(b, "U1", "eyes", true)           // nor are reactions
		flush(t, o)

		if !refused {
			t.Fatal("the platform never refused the edit")
		}
		for _, c := range r.accepted("edit", nil) {
			if c.At.Sub(t0) < 5*time.Second {
				t.Errorf("edit of %s sent %v after the 429; want it to wait the Retry-After of 5s", c.ID, c.At.Sub(t0))
			}
		}
		if got := r.accepted("edit", func(c call) bool { return c.ID == idA }); len(got) != 1 || got[0].Text != "a edited again" {
			t.Errorf("edits of the refused message: got %q, want it retried once with the latest text %q", texts(got), "a edited again")
		}
		for _, kind := range []string{"post", "react"} {
			cs := r.accepted(kind, func(c call) bool { return c.At.After(t0) })
			if len(cs) != 1 || cs[0].At.Sub(t0) > time.Second {
				t.Errorf("%s after the 429: got %+v, want one at once (another scope)", kind, cs)
			}
		}
		if got := o.Stats().RateLimited; got != 1 {
			t.Errorf("rate limited count: got %d, want 1", got)
		}
	})
}

func TestGlobalRateLimitPausesEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		o := start(t, r, outbox.Config{Limits: outbox.DiscordLimits()})
		refused := 0
		r.setFail(func(c call) error {
			if c.Text == "a" && refused < 1 {
				refused++
				return &chat.RateLimitError{RetryAfter: 3 * time.Second, Global: true}
			}
			return nil
		})
		t0 := time.Now()
		ma := o.Post(ref("C1", "a"), "a", outbox.High, nil)
		synctest.Wait()
		o.Post(ref("C2", "b"), "b", outbox.High, nil)
		o.React(ref("C3", "c"), "U1", "eyes", true)
		flush(t, o)

		if _, err := ma.Wait(t.Context()); err != nil {
			t.Errorf("the refused post: got %v, want it delivered after the Retry-After", err)
		}
		for _, c := range r.accepted("", nil) {
			if d := c.At.Sub(t0); d < 3*time.Second {
				t.Errorf("%s %q sent %v after a global 429; want nothing before its Retry-After of 3s", c.Kind, c.Text, d)
			}
		}
		if got := len(r.accepted("", nil)); got != 3 {
			t.Errorf("calls delivered: got %d, want 3", got)
		}
		if got := o.Stats().RateLimited; got != 1 {
			t.Errorf("rate limited count: got %d, want 1", got)
		}
	})
}

func TestHighOvertakesLowWhenBudgetIsShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		lim := outbox.SlackLimits()
		o := start(t, r, outbox.Config{Limits: lim})
		var msgs []*outbox.Message
		for i := range 12 {
			msgs = append(msgs, o.Post(ref(fmt.Sprintf("C%d", i), "t"), fmt.Sprintf("m%d", i), outbox.Normal, nil))
		}
		flush(t, o)

		t0 := time.Now()
		for i, m := range msgs[:10] {
			o.Edit(m, fmt.Sprintf("low %d", i), outbox.Low)
		}
		synctest.Wait()
		lowNow := r.accepted("edit", nil)
		// The workspace holds 5 tokens; Low edits leave the reserve of 1.
		if want := lim.EditPerWorkspace.Burst - 1; len(lowNow) != want {
			t.Errorf("Low edits sent at once from a full workspace budget: got %d, want %d (the rest is reserved)", len(lowNow), want)
		}
		o.Edit(msgs[10], "high 10", outbox.High)
		o.Edit(msgs[11], "high 11", outbox.High)
		flush(t, o)

		edits := r.accepted("edit", nil)
		at := map[string]time.Time{}
		for _, e := range edits {
			at[e.Text] = e.At
		}
		if got := at["high 10"]; !got.Equal(t0) {
			t.Errorf("first High edit sent %v after it was requested; want at once, from the reserve", got.Sub(t0))
		}
		for i := len(lowNow); i < 10; i++ {
			low := fmt.Sprintf("low %d", i)
			if !at["high 11"].Before(at[low]) {
				t.Errorf("High edit sent at +%v, queued Low %q at +%v: want High first", at["high 11"].Sub(t0), low, at[low].Sub(t0))
			}
		}
		if len(edits) != 12 {
			t.Errorf("edits sent: got %d, want all 12", len(edits))
		}
	})
}

func TestHigherPriorityFirstThenOldest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		o := start(t, r, outbox.Config{Limits: outbox.Limits{PostPerChannel: outbox.Rate{Every: time.Second, Burst: 1}}})
		// Different threads of one channel: no thread order between them, one budget.
		o.Post(ref("C1", "1"), "n1", outbox.Normal, nil)
		synctest.Wait() // n1 took the token; the rest wait for the next ones
		o.Post(ref("C1", "2"), "n2", outbox.Normal, nil)
		o.Post(ref("C1", "3"), "n3", outbox.Normal, nil)
		o.Post(ref("C1", "4"), "h4", outbox.High, nil)
		o.Post(ref("C1", "5"), "n5", outbox.Normal, nil)
		o.Post(ref("C1", "6"), "h6", outbox.High, nil)
		flush(t, o)
		if got, want := texts(r.accepted("", nil)), []string{"post:n1", "post:h4", "post:h6", "post:n2", "post:n3", "post:n5"}; !slices.Equal(got, want) {
			t.Errorf("calls: got %q, want %q", got, want)
		}
	})
}

func TestEditBeforePostMergesIntoPost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		o := start(t, r, outbox.Config{Limits: outbox.Limits{PostPerChannel: outbox.Rate{Every: time.Second, Burst: 1}}})
		th := ref("C1", "t")
		o.Post(th, "first", outbox.Normal, nil)
		m := o.Post(th, "draft", outbox.Low, nil) // waits a second for the channel budget
		o.Edit(m, "draft 2", outbox.Low)
		o.Edit(m, "final", outbox.High)
		flush(t, o)

		if got, want := texts(r.accepted("", nil)), []string{"post:first", "post:final"}; !slices.Equal(got, want) {
			t.Errorf("calls: got %q, want %q", got, want)
		}
		if st := o.Stats(); st.EditsRequested != 2 || st.EditsSent != 0 {
			t.Errorf("stats: got %d requested, %d sent; want 2 requested merged into the post", st.EditsRequested, st.EditsSent)
		}
	})
}

func TestPostFailureReportsAndDropsEdits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		r := newRecorder()
		r.latency = 100 * time.Millisecond
		r.setFail(func(c call) error {
			if c.Kind == "post" {
				return errors.New("channel_not_found")
			}
			return nil
		})
		o := start(t, r, outbox.Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		th := ref("C1", "t")
		got := make(chan error, 1)
		m := o.Post(th, "secret plan", outbox.High, func(id string, err error) { got <- err })
		synctest.Wait()                         // the post is in flight
		o.Edit(m, "secret plan v2", outbox.Low) // waits for the post, then dropped
		if err := <-got; err == nil || !strings.Contains(err.Error(), "channel_not_found") {
			t.Errorf("onPosted: got %v, want the platform's error", err)
		}
		if id, err := m.Wait(t.Context()); id != "" || err == nil {
			t.Errorf("Wait: got %q, %v; want no id and the error", id, err)
		}
		o.Edit(m, "secret plan v3", outbox.High)
		flush(t, o)

		if edits := r.all(); len(edits) != 1 {
			t.Errorf("calls: got %+v, want only the failed post", edits)
		}
		st := o.Stats()
		if st.Failures != 1 || st.EditsDropped != 2 || st.Posts != 0 {
			t.Errorf("stats: got %+v, want 1 failure, 2 edits dropped, no post", st)
		}
		if !strings.Contains(logs.String(), "giving up") || strings.Contains(logs.String(), "secret") {
			t.Errorf("log: got %q, want the failure logged without the message text", logs.String())
		}
	})
}

type retryable struct{}

func (retryable) Error() string   { return "503 service unavailable" }
func (retryable) Retryable() bool { return true }

func TestTransientFailuresAreRetriedWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		failures := 0
		r.setFail(func(c call) error {
			if failures < 2 {
				failures++
				return retryable{}
			}
			return nil
		})
		o := start(t, r, outbox.Config{Backoff: time.Second})
		m := o.Post(ref("C1", "t"), "hello", outbox.High, nil)
		id, err := m.Wait(t.Context())
		if err != nil || id == "" {
			t.Fatalf("Wait: got %q, %v; want the id after two retries", id, err)
		}
		all := r.all()
		if len(all) != 3 {
			t.Fatalf("calls: got %d, want 3 (two failures, one success)", len(all))
		}
		if d := all[1].At.Sub(all[0].At); d < time.Second {
			t.Errorf("first retry after %v; want at least the 1s backoff", d)
		}
		if d := all[2].At.Sub(all[1].At); d < 2*time.Second {
			t.Errorf("second retry after %v; want at least 2s (doubling)", d)
		}
		if st := o.Stats(); st.Retries != 2 || st.Posts != 1 || st.Failures != 0 {
			t.Errorf("stats: got %+v, want 2 retries, 1 post, no failure", st)
		}
	})
}

func TestTransientFailureGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.setFail(func(call) error { return retryable{} })
		o := start(t, r, outbox.Config{Retries: 2, Backoff: time.Second})
		m := o.Post(ref("C1", "t"), "hello", outbox.High, nil)
		if _, err := m.Wait(t.Context()); !errors.Is(err, retryable{}) {
			t.Errorf("Wait: got %v, want the transient error after the retries", err)
		}
		if got := len(r.all()); got != 3 {
			t.Errorf("calls: got %d, want 3 (the call and 2 retries)", got)
		}
	})
}

func TestAdoptedMessageCanBeEdited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.adopt("old-1")
		o := start(t, r, outbox.Config{Limits: outbox.SlackLimits()})
		th := ref("C1", "t")
		m := o.Adopt(th, "old-1")
		if m.ID() != "old-1" {
			t.Errorf("ID: got %q, want old-1", m.ID())
		}
		o.Edit(m, "interrupted", outbox.High)
		flush(t, o)
		got := r.accepted("edit", nil)
		if len(got) != 1 || got[0].ID != "old-1" || got[0].Text != "interrupted" || got[0].Thread != th {
			t.Errorf("edits: got %+v, want one edit of old-1 to %q", got, "interrupted")
		}
	})
}

// Status updates have a lane of their own: one call per thread at a time,
// the latest waiting status replacing the others, and no post waits for one.
func TestStatusCoalescesInItsOwnLane(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.latency = 100 * time.Millisecond
		o := start(t, r, outbox.Config{Limits: outbox.Limits{PostPerChannel: outbox.Rate{Every: time.Second, Burst: 1}}})
		th := ref("C1", "t")
		o.SetStatus(th, "starting")
		synctest.Wait() // in flight
		begin := time.Now()
		o.Post(th, "first", outbox.Normal, nil)
		for i := range 50 {
			o.SetStatus(th, fmt.Sprintf("working %d", i))
		}
		flush(t, o)
		time.Sleep(time.Second)
		o.SetStatus(th, "")
		time.Sleep(time.Second)

		if got, want := texts(r.accepted("status", nil)), []string{"status:starting", "status:working 49", "status:"}; !slices.Equal(got, want) {
			t.Errorf("statuses: got %q, want %q", got, want)
		}
		if posts := r.accepted("post", nil); len(posts) != 1 || posts[0].At != begin {
			t.Errorf("posts %+v, want the post at once (%v), beside the status in flight", posts, begin)
		}
		if st := o.Stats(); st.Statuses != 3 || st.StatusDropped != 0 {
			t.Errorf("stats %+v, want 3 statuses sent, none dropped", st)
		}
	})
}

// A status the platform refuses with a rate limit is dropped, not retried:
// the answer behind it goes at once, and the next status waits out the
// Retry-After.
func TestRateLimitedStatusIsDroppedAndDelaysNoPost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.latency = 10 * time.Millisecond
		limited := true
		r.setFail(func(c call) error {
			if c.Kind == "status" && limited {
				limited = false
				return &chat.RateLimitError{RetryAfter: 30 * time.Second}
			}
			return nil
		})
		o := start(t, r, outbox.Config{Workers: 1, Limits: outbox.SlackLimits()})
		th := ref("C1", "t")
		o.SetStatus(th, "is working…")
		synctest.Wait()
		begin := time.Now()
		o.Post(th, "the answer", outbox.High, nil)
		o.SetStatus(th, "")
		flush(t, o)
		if d := time.Since(begin); d > time.Second {
			t.Errorf("the answer took %v after a rate-limited status, want under 1s", d)
		}
		time.Sleep(20 * time.Second)
		if got := texts(r.all()); len(got) != 2 || !slices.Contains(got, "status:is working…") || !slices.Contains(got, "post:the answer") {
			t.Errorf("calls %q, want the refused status and the answer, no status retried", got)
		}
		time.Sleep(time.Minute)
		calls := r.all()
		if last := calls[len(calls)-1]; last.Kind != "status" || last.Text != "" || last.At.Sub(begin) < 29*time.Second {
			t.Errorf("last call %+v at %v, want the clearing status after the 30 s Retry-After", last, last.At.Sub(begin))
		}
		if st := o.Stats(); st.StatusDropped != 1 || st.RateLimited != 1 || st.Statuses != 1 {
			t.Errorf("stats %+v, want one status dropped for the rate limit, one sent", st)
		}
	})
}

// With 8 threads refreshing their status every 8 s, status calls stay within
// their own budget, spread over the threads, and take no worker a post needs.
func TestStatusBudgetWithEightRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.latency = 50 * time.Millisecond
		budget := outbox.PerWindow(20, time.Minute, 5)
		o := start(t, r, outbox.Config{Workers: 2, Limits: outbox.Limits{Status: budget}})
		var ths []chat.ThreadRef
		for i := range 8 {
			ths = append(ths, ref("C1", fmt.Sprintf("t%d", i)))
		}
		begin := time.Now()
		for tick := 0; tick < 3*60/8; tick++ {
			for _, th := range ths {
				o.SetStatus(th, "is working…")
			}
			time.Sleep(8 * time.Second)
		}
		for _, th := range ths {
			o.SetStatus(th, "")
		}
		posted := time.Now()
		for _, th := range ths {
			o.Post(th, "answer", outbox.Normal, nil)
		}
		flush(t, o)
		if d := time.Since(posted); d > time.Second {
			t.Errorf("8 answers took %v beside the statuses, want under 1s", d)
		}
		st := r.accepted("status", nil)
		if n := len(r.accepted("status", func(c call) bool { return c.At.Sub(begin) < time.Second })); n != 5 {
			t.Errorf("%d status calls in the first second, want the budget's burst of 5", n)
		}
		for i, c := range st {
			n := 0
			for _, d := range st[i:] {
				if d.At.Sub(c.At) < time.Minute {
					n++
				}
			}
			if n > 20 {
				t.Fatalf("%d status calls in the minute from %v, want at most 20", n, c.At.Sub(begin))
			}
		}
		if len(st) < 50 {
			t.Errorf("%d status calls in 3 minutes, want the budget used (about 60)", len(st))
		}
		seen := map[chat.ThreadRef]int{}
		for _, c := range st {
			seen[c.Thread]++
		}
		for _, th := range ths {
			if seen[th] < 5 {
				t.Errorf("thread %s got %d status calls in 3 minutes, want its share", th.Thread, seen[th])
			}
		}
	})
}

func TestReactionsKeepCallOrderPerMessage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.latency = 50 * time.Millisecond
		o := start(t, r, outbox.Config{})
		th := ref("C1", "t")
		o.React(th, "U1", "hourglass_flowing_sand", true)
		o.React(th, "U2", "arrow_right_hook", true)
		o.React(th, "U1", "hourglass_flowing_sand", false)
		o.React(th, "U1", "eyes", true)
		o.React(th, "U2", "arrow_right_hook", false)
		flush(t, o)

		var got []string
		for _, c := range r.accepted("react", func(c call) bool { return c.ID == "U1" }) {
			got = append(got, fmt.Sprintf("%s:%v", c.Emoji, c.Add))
		}
		want := []string{"hourglass_flowing_sand:true", "hourglass_flowing_sand:false", "eyes:true"}
		if !slices.Equal(got, want) {
			t.Errorf("reactions on U1: got %q, want %q", got, want)
		}
		if got := o.Stats().Reactions; got != 5 {
			t.Errorf("reactions: got %d, want 5", got)
		}
	})
}

func TestAdapterWithoutOptionalCapabilities(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		o := start(t, plainAdapter{r}, outbox.Config{Limits: outbox.Limits{PostPerChannel: outbox.Rate{Every: time.Second, Burst: 1}}})
		th := ref("C1", "t")
		o.Post(th, "first", outbox.Normal, nil)
		m := o.Post(th, "draft", outbox.Normal, nil)
		o.Edit(m, "final", outbox.Normal) // merges into the post: no Editor needed
		o.SetStatus(th, "working")        // no StatusSetter: nothing
		o.React(th, "U1", "eyes", true)   // no Reactor: nothing
		o.Upload(th, "x.patch", nil, "")  // no Uploader: a failure
		flush(t, o)
		o.Edit(m, "later", outbox.Normal) // no Editor: dropped
		flush(t, o)

		if got, want := texts(r.all()), []string{"post:first", "post:final"}; !slices.Equal(got, want) {
			t.Errorf("calls: got %q, want %q", got, want)
		}
		if st := o.Stats(); st.EditsDropped != 1 || st.Failures != 1 {
			t.Errorf("stats: got %+v, want 1 edit dropped and the upload failed", st)
		}
	})
}

func TestFlushAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.latency = 50 * time.Millisecond
		o := outbox.New(r, outbox.Config{Limits: outbox.SlackLimits(), Logger: slog.New(slog.DiscardHandler)})
		var msgs []*outbox.Message
		for i := range 3 {
			for j := range 8 {
				msgs = append(msgs, o.Post(ref("C1", fmt.Sprint(i)), fmt.Sprintf("%d.%d", i, j), outbox.Normal, nil))
			}
		}
		o.Edit(msgs[0], "edited", outbox.Low)
		flush(t, o)
		if got := len(r.accepted("post", nil)); got != 24 {
			t.Errorf("posts after Flush: got %d, want 24", got)
		}
		for _, m := range msgs {
			if m.ID() == "" {
				t.Errorf("message without id after Flush")
			}
		}
		// The edit merged into the post or followed it; either way it was sent.
		shown := r.accepted("", func(c call) bool { return c.ID == msgs[0].ID() })
		if got := shown[len(shown)-1].Text; got != "edited" {
			t.Errorf("first message after Flush: got %q, want %q", got, "edited")
		}

		o.Post(ref("C1", "late"), "before close", outbox.Normal, nil)
		if err := o.Close(t.Context()); err != nil {
			t.Fatalf("Close: got %v, want nil", err)
		}
		if got := r.accepted("post", func(c call) bool { return c.Text == "before close" }); len(got) != 1 {
			t.Errorf("post queued before Close: got %d sent, want 1", len(got))
		}
		var got error
		m := o.Post(ref("C1", "0"), "after close", outbox.High, func(_ string, err error) { got = err })
		if !errors.Is(got, outbox.ErrClosed) {
			t.Errorf("onPosted after Close: got %v, want ErrClosed", got)
		}
		if _, err := m.Wait(t.Context()); !errors.Is(err, outbox.ErrClosed) {
			t.Errorf("Wait after Close: got %v, want ErrClosed", err)
		}
		if err := o.Close(t.Context()); err != nil {
			t.Errorf("second Close: got %v, want nil", err)
		}
		// synctest.Test fails if any Outbox goroutine is still blocked here.
	})
}

func TestCloseGivesUpWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.setFail(func(c call) error { return &chat.RateLimitError{RetryAfter: time.Hour} })
		o := outbox.New(r, outbox.Config{Logger: slog.New(slog.DiscardHandler)})
		got := make(chan error, 1)
		m := o.Post(ref("C1", "t"), "stuck", outbox.High, func(_ string, err error) { got <- err })
		o.Edit(m, "stuck 2", outbox.Low)
		o.React(ref("C1", "t"), "U1", "eyes", true)

		fctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if err := o.Flush(fctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Flush: got %v, want DeadlineExceeded", err)
		}
		ctx, cancel2 := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel2()
		t0 := time.Now()
		if err := o.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Close: got %v, want DeadlineExceeded", err)
		}
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("Close took %v, want it bounded by its 2s context", d)
		}
		if err := <-got; !errors.Is(err, outbox.ErrClosed) {
			t.Errorf("onPosted: got %v, want ErrClosed", err)
		}
		if _, err := m.Wait(t.Context()); !errors.Is(err, outbox.ErrClosed) {
			t.Errorf("Wait: got %v, want ErrClosed", err)
		}
	})
}

func TestFlushDoesNotWaitForLaterWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		o := start(t, r, outbox.Config{Limits: outbox.SlackLimits()})
		m := o.Post(ref("C1", "t"), "working…", outbox.Normal, nil)
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
					o.Edit(m, fmt.Sprint("v", i), outbox.Low)
				}
			}
		}()
		time.Sleep(5 * time.Second)
		o.Post(ref("C1", "t"), "notice", outbox.High, nil)
		t0 := time.Now()
		flush(t, o) // the stream goes on, but Flush only waits for what came before it
		if d := time.Since(t0); d > 2*time.Second {
			t.Errorf("Flush took %v with a stream still running; want it back within the per-message window", d)
		}
		if got := r.accepted("post", func(c call) bool { return c.Text == "notice" }); len(got) != 1 {
			t.Errorf("notice posts after Flush: got %d, want 1", len(got))
		}
		close(stop)
		<-stopped
	})
}

// TestLongStream is the figure behind BENCHMARKS.md's "edits sent vs edits
// requested": a 60 s stream with an edit requested every 20 ms under Slack's
// budgets.
func TestLongStream(t *testing.T) {
	for _, c := range []struct {
		name     string
		lim      outbox.Limits
		min, max int64
	}{
		// The workspace's 50 per minute caps even a single stream.
		{"slack", outbox.SlackLimits(), 45, 51},
		// One edit per second per message: 60 s of stream and the final.
		{"per-message only", outbox.Limits{EditPerMessage: outbox.SlackLimits().EditPerMessage}, 60, 62},
	} {
		synctest.Test(t, func(t *testing.T) {
			r := newRecorder()
			o := start(t, r, outbox.Config{Limits: c.lim})
			m := o.Post(ref("C1", "t"), "working…", outbox.High, nil)
			stream(o, m, "answer", 20*time.Millisecond, time.Minute)
			flush(t, o)

			st := o.Stats()
			t.Logf("%s: 60 s stream, an edit requested every 20 ms: requested %d, sent %d", c.name, st.EditsRequested, st.EditsSent)
			if st.EditsRequested != 3001 || st.EditsSent < c.min || st.EditsSent > c.max {
				t.Errorf("%s: got %d requested, %d sent; want 3001 requested, %d to %d sent", c.name, st.EditsRequested, st.EditsSent, c.min, c.max)
			}
			edits := r.accepted("edit", nil)
			if got := edits[len(edits)-1].Text; got != "answer final" {
				t.Errorf("%s: last edit: got %q, want %q", c.name, got, "answer final")
			}
		})
	}
}
