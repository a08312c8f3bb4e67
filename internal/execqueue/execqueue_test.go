package execqueue

import (
	"bytes"
	"context"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestItemsRunInOrderOneAtATime(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []int
	inRun := 0
	q := &Queue[int]{Run: func(v int) {
		mu.Lock()
		inRun++
		if inRun > 1 {
			t.Errorf("two items ran at once")
		}
		got = append(got, v)
		mu.Unlock()
		runtime.Gosched()
		mu.Lock()
		inRun--
		mu.Unlock()
	}}
	for i := range 1000 {
		q.Add(i)
	}
	if err := q.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1000 {
		t.Fatalf("ran %d items, want 1000", len(got))
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("item %d ran as %d: order not kept", i, v)
		}
	}
}

func TestNoGoroutineWhileIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := NewFunc(nil)
		ran := false
		q.Add(func() { ran = true })
		synctest.Wait() // every goroutine of the bubble is blocked or gone
		if !ran {
			t.Fatal("item did not run")
		}
		// synctest.Test fails if a goroutine of the bubble is left over.
	})
}

func TestAddNeverBlocksOnWork(t *testing.T) {
	t.Parallel()
	release, started := make(chan struct{}), make(chan struct{})
	q := NewFunc(nil)
	q.Add(func() { close(started); <-release })
	<-started
	done := make(chan struct{})
	go func() {
		for range 100 {
			q.Add(func() {})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Add blocked behind a running item")
	}
	if n := q.Len(); n != 100 {
		t.Fatalf("Len = %d, want 100", n)
	}
	close(release)
	if err := q.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestPanicIsLoggedAndQueueGoesOn(t *testing.T) {
	t.Parallel()
	p := &panicProbe{}
	q := &Queue[string]{Log: p.logger(), Name: func(s string) string { return "item " + s }, Run: p.run}
	q.Add("a")
	q.Add("bad")
	q.Add("b")
	if err := q.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.check(t, "item bad")
}

// panicProbe is a Run that panics on "bad" and records the other items, and
// the log that receives the panic.
type panicProbe struct {
	mu  sync.Mutex
	buf bytes.Buffer
	ran []string
}

func (p *panicProbe) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(&lockedWriter{w: &p.buf, mu: &p.mu}, nil))
}

func (p *panicProbe) run(s string) {
	if s == "bad" {
		panic("boom")
	}
	p.mu.Lock()
	p.ran = append(p.ran, s)
	p.mu.Unlock()
}

// check asserts that a and b ran around the panic, and that the panic was
// logged with the item's name and the stack.
func (p *panicProbe) check(t *testing.T, name string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if strings.Join(p.ran, ",") != "a,b" {
		t.Fatalf("ran %v, want a,b", p.ran)
	}
	out := p.buf.String()
	if !strings.Contains(out, "boom") || !strings.Contains(out, name) || !strings.Contains(out, "execqueue_test.go") {
		t.Fatalf("panic not logged with its item and stack:\n%s", out)
	}
}

func TestAddFrontRunsBeforeWaitingItems(t *testing.T) {
	t.Parallel()
	var got []string
	var q *Queue[string]
	q = &Queue[string]{Run: func(s string) {
		got = append(got, s)
		if s == "a" {
			q.AddFront("a1", "a2")
		}
	}}
	q.Add("a")
	q.Add("b")
	q.Add("c")
	if err := q.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := strings.Join(got, ","); s != "a,a1,a2,b,c" {
		t.Fatalf("order %s, want a,a1,a2,b,c", s)
	}
}

func TestAddFrontInTheMiddleOfABatch(t *testing.T) {
	t.Parallel()
	var got []string
	var q *Queue[string]
	gate := make(chan struct{})
	q = &Queue[string]{Run: func(s string) {
		if s == "gate" {
			<-gate
			return
		}
		got = append(got, s)
		if s == "a" {
			q.AddFront("x")
		}
	}}
	q.Add("gate")
	for _, s := range []string{"a", "b", "c"} {
		q.Add(s) // one batch behind the gate
	}
	close(gate)
	if err := q.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if s := strings.Join(got, ","); s != "a,x,b,c" {
		t.Fatalf("order %s, want a,x,b,c", s)
	}
}

func TestCloseDropsLaterItemsAndKeepsQueuedOnes(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	n := 0
	q := &Queue[int]{Run: func(v int) {
		if v == 0 {
			<-gate
		}
		n++
	}}
	q.Add(0)
	q.Add(1)
	q.Close()
	if q.Add(2) {
		t.Fatal("Add after Close was taken")
	}
	close(gate)
	if err := q.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("ran %d items, want the 2 added before Close", n)
	}
}

func TestWaitHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		q := NewFunc(nil)
		q.Add(func() { <-gate })
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := q.Wait(ctx); err != context.DeadlineExceeded {
			t.Fatalf("Wait = %v, want the context's deadline", err)
		}
		close(gate)
		if err := q.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func BenchmarkSteadyStream(b *testing.B) {
	n := 0
	q := &Queue[int]{Run: func(v int) { n += v }}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		q.Add(1)
		if i%64 == 63 {
			_ = q.Wait(context.Background())
		}
	}
	_ = q.Wait(context.Background())
}

type lockedWriter struct {
	w  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Len seen from Run counts what is still to run, the rest of the batch being
// run included, and not the item running: an owner that asks whether more
// work waits for it must not miss items taken in the same batch.
func TestLenCountsTheRestOfTheBatch(t *testing.T) {
	t.Parallel()
	var q *Queue[int]
	var got []int
	gate := make(chan struct{})
	q = &Queue[int]{Run: func(v int) {
		if v == 0 {
			<-gate
		}
		got = append(got, q.Len())
	}}
	q.Add(0)
	for i := 1; i <= 3; i++ {
		q.Add(i)
	}
	close(gate)
	if err := q.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Item 0 ran alone (items 1–3 came while it ran), then 1–3 as one batch.
	want := []int{3, 2, 1, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Len seen by each item = %v, want %v", got, want)
		}
	}
	q.Add(1)
	q.Add(2)
	q.Add(3)
	if err := q.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := got[4:]; got[0] != 2 || got[1] != 1 || got[2] != 0 {
		t.Fatalf("Len within one batch = %v, want [2 1 0]", got)
	}
}
