package outbox_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/outbox"
)

var errEditWindow = errors.New("edit_window_closed")

// A status's final text shows even when the platform refuses the edit for
// good: it is posted as a new message. A streamed edit refused the same way
// is only dropped.
func TestEditFinalPostsWhatCannotBeEdited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRecorder()
		r.setFail(func(c call) error {
			if c.Kind == "edit" {
				return errEditWindow
			}
			return nil
		})
		o := start(t, r, outbox.Config{})
		th := ref("C1", "t")
		m := o.Post(th, "⏳ working…", outbox.High, nil)
		if _, err := m.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		o.Edit(m, "⏳ working… preview", outbox.Low)
		flush(t, o)
		o.EditFinal(m, "✓ done", outbox.Normal)
		flush(t, o)
		if got, want := texts(r.accepted("post", nil)), []string{"post:⏳ working…", "post:✓ done"}; !slices.Equal(got, want) {
			t.Errorf("posts: got %q, want %q", got, want)
		}

		// A message whose post failed: its final text is posted anew.
		r.setFail(func(c call) error {
			if c.Kind == "post" && c.Text == "lost" {
				return errors.New("channel_not_found")
			}
			return nil
		})
		lost := o.Post(th, "lost", outbox.High, nil)
		if _, err := lost.Wait(t.Context()); err == nil {
			t.Fatal("the post did not fail")
		}
		o.EditFinal(lost, "final after all", outbox.High)
		flush(t, o)
		if posts := texts(r.accepted("post", nil)); posts[len(posts)-1] != "post:final after all" {
			t.Errorf("posts: got %q, want the final text last", posts)
		}
	})
}

// timeoutErr is a call that got no answer: the platform may have done it.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// oncePoster is a platform that creates a message and then loses the answer
// (once), and remembers posts by key, as Discord's enforce_nonce does.
type oncePoster struct {
	*recorder
	mu    sync.Mutex
	byKey map[string]string
	keys  []chat.PostKey
	lose  bool
}

func (p *oncePoster) PostOnce(ctx context.Context, thread chat.ThreadRef, text string, key chat.PostKey) (string, error) {
	p.mu.Lock()
	p.keys = append(p.keys, key)
	if id, ok := p.byKey[key.ID]; ok {
		p.mu.Unlock()
		return id, nil
	}
	lose := p.lose
	p.lose = false
	p.mu.Unlock()
	id, err := p.Post(ctx, thread, text)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	p.byKey[key.ID] = id
	p.mu.Unlock()
	if lose {
		return "", timeoutErr{}
	}
	return id, nil
}

// A post retried after a timeout keeps its key and says it is a retry; the
// platform then returns the message it made, and the thread shows it once.
func TestPostRetriedAfterATimeoutKeepsItsKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &oncePoster{recorder: newRecorder(), byKey: map[string]string{}, lose: true}
		o := start(t, p, outbox.Config{Backoff: time.Second})
		th := ref("C1", "t")
		m := o.Post(th, "the answer", outbox.High, nil)
		id, err := m.Wait(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		other := o.Post(th, "another", outbox.High, nil)
		flush(t, o)
		if got := texts(p.accepted("post", nil)); !slices.Equal(got, []string{"post:the answer", "post:another"}) {
			t.Errorf("posts: got %q, want each once", got)
		}
		if len(p.keys) != 3 {
			t.Fatalf("PostOnce calls: %+v, want 3 (a timeout, its retry, another post)", p.keys)
		}
		first, retry, next := p.keys[0], p.keys[1], p.keys[2]
		if first.ID == "" || retry.ID != first.ID || first.Retry || !retry.Retry || !retry.First.Equal(first.First) {
			t.Errorf("keys: first %+v, retry %+v; want the same id and first time, Retry only on the retry", first, retry)
		}
		if next.ID == first.ID || next.Retry || len(first.ID) > 25 {
			t.Errorf("the next post's key %+v; want a new id (at most 25 characters) and no retry", next)
		}
		if oid, _ := other.Wait(t.Context()); oid == id {
			t.Errorf("two posts got the same id %s", id)
		}
	})
}

// A post queued again after a restart with the key it was stored with (and
// Retry, and the time of the first process's attempt) reaches the platform
// with that key: the platform returns the message the first process made,
// and the thread shows it once.
func TestPostKeyedCarriesTheCallersKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &oncePoster{recorder: newRecorder(), byKey: map[string]string{}}
		o := start(t, p, outbox.Config{Backoff: time.Second})
		th := ref("C1", "t")
		first := time.Now().Add(-time.Minute)
		id1, err := o.PostKeyed(th, "the answer", outbox.High, chat.PostKey{ID: "run7-answer"}, nil).Wait(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		cb := make(chan string, 1)
		m := o.PostKeyed(th, "the answer", outbox.High, chat.PostKey{ID: "run7-answer", Retry: true, First: first},
			func(id string, err error) { cb <- id })
		id2, err := m.Wait(t.Context())
		flush(t, o)
		cbID := <-cb
		if err != nil || id2 != id1 || cbID != id1 {
			t.Errorf("the repeated post: id %q (callback %q), %v; want the first one's %q", id2, cbID, err, id1)
		}
		if got := texts(p.accepted("post", nil)); !slices.Equal(got, []string{"post:the answer"}) {
			t.Errorf("posts: got %q, want one", got)
		}
		if len(p.keys) != 2 {
			t.Fatalf("PostOnce calls: %+v, want 2", p.keys)
		}
		if k := p.keys[0]; k.ID != "run7-answer" || k.Retry || k.First.IsZero() {
			t.Errorf("first key %+v: want the caller's id, no retry, the attempt's time", k)
		}
		if k := p.keys[1]; k.ID != "run7-answer" || !k.Retry || !k.First.Equal(first) {
			t.Errorf("repeated key %+v: want the caller's id, Retry, First %v", k, first)
		}
	})
}

// onceUploader is a recorder whose adapter shares a file once per key, and
// whose first upload's answer is lost, as after a timeout.
type onceUploader struct {
	*recorder
	mu     sync.Mutex
	keys   []chat.PostKey
	shared map[string]bool
	lose   bool
}

func (u *onceUploader) UploadOnce(ctx context.Context, thread chat.ThreadRef, name string, content []byte, comment string, key chat.PostKey) error {
	u.mu.Lock()
	u.keys = append(u.keys, key)
	done := u.shared[key.ID]
	lose := u.lose
	u.lose = false
	u.mu.Unlock()
	if done {
		return nil
	}
	if err := u.Upload(ctx, thread, name, content, comment); err != nil {
		return err
	}
	u.mu.Lock()
	u.shared[key.ID] = true
	u.mu.Unlock()
	if lose {
		return timeoutErr{}
	}
	return nil
}

// An upload retried after a timeout keeps its key and says it is a retry,
// so that the adapter can find the file it shared: the thread shows it once.
func TestUploadRetriedAfterATimeoutKeepsItsKey(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u := &onceUploader{recorder: newRecorder(), shared: map[string]bool{}, lose: true}
		o := start(t, u, outbox.Config{Backoff: time.Second})
		th := ref("C1", "t")
		o.Upload(th, "a.diff", []byte("+a"), "first")
		o.Upload(th, "b.diff", []byte("+b"), "second")
		flush(t, o)
		if got := texts(u.accepted("upload", nil)); !slices.Equal(got, []string{"upload:first", "upload:second"}) {
			t.Errorf("uploads: got %q, want each once", got)
		}
		if len(u.keys) != 3 {
			t.Fatalf("UploadOnce calls: %+v, want 3 (a timeout, its retry, another upload)", u.keys)
		}
		first, retry, next := u.keys[0], u.keys[1], u.keys[2]
		if first.ID == "" || retry.ID != first.ID || first.Retry || !retry.Retry || first.First.IsZero() || !retry.First.Equal(first.First) {
			t.Errorf("keys: first %+v, retry %+v; want the same id and first time, Retry only on the retry", first, retry)
		}
		if next.ID == first.ID || next.Retry || len(first.ID) > 25 {
			t.Errorf("the next upload's key %+v; want a new id (at most 25 characters) and no retry", next)
		}
	})
}
