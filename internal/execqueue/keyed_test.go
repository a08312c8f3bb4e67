package execqueue

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

type keyedItem struct {
	key string
	n   int
}

func TestKeyedKeepsOrderPerKeyAndRunsKeysApart(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := map[string][]int{}
	busy := map[string]bool{}
	k := &Keyed[string, keyedItem]{Run: func(it keyedItem) {
		mu.Lock()
		if busy[it.key] {
			t.Errorf("two items of key %s ran at once", it.key)
		}
		busy[it.key] = true
		mu.Unlock()
		runtime.Gosched()
		mu.Lock()
		got[it.key] = append(got[it.key], it.n)
		busy[it.key] = false
		mu.Unlock()
	}}
	// One producer per key, several keys at once, each key going idle and
	// waking up again many times: the release of a drained key races Adds.
	var wg sync.WaitGroup
	for key := range 8 {
		wg.Go(func() {
			name := fmt.Sprint("k", key)
			for n := range 2000 {
				k.Add(name, keyedItem{name, n})
				if n%2 == 0 {
					runtime.Gosched() // let the key drain now and then
				}
			}
		})
	}
	wg.Wait()
	if err := k.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(got) != 8 {
		t.Fatalf("%d keys ran, want 8", len(got))
	}
	for key, ns := range got {
		if len(ns) != 2000 {
			t.Fatalf("key %s ran %d items, want 2000", key, len(ns))
		}
		for i, n := range ns {
			if n != i {
				t.Fatalf("key %s: item %d ran as %d: order not kept", key, i, n)
			}
		}
	}
	if n := k.Keys(); n != 0 {
		t.Fatalf("%d keys kept after the work ended, want 0", n)
	}
}

func TestKeyedSlowKeyDelaysNoOther(t *testing.T) {
	t.Parallel()
	gate := make(chan struct{})
	fastDone := make(chan struct{})
	k := &Keyed[string, func()]{Run: func(f func()) { f() }}
	k.Add("slow", func() { <-gate })
	k.Add("slow", func() {})
	k.Add("fast", func() { close(fastDone) })
	select {
	case <-fastDone:
	case <-time.After(10 * time.Second):
		t.Fatal("a key waited behind another key's work")
	}
	if n := k.Keys(); n != 1 {
		t.Fatalf("Keys = %d with only the slow key busy, want 1", n)
	}
	close(gate)
	if err := k.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestKeyedIdleHoldsNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := &Keyed[int, int]{Run: func(int) {}}
		for key := range 100 {
			k.Add(key, key)
		}
		synctest.Wait()
		if n := k.Keys(); n != 0 {
			t.Fatalf("%d idle keys kept, want 0", n)
		}
		if err := k.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		// synctest.Test fails if a goroutine of the bubble is left over.
	})
}

func TestKeyedWaitCoversEveryKeyAndHonoursContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		gate := make(chan struct{})
		k := &Keyed[string, func()]{Run: func(f func()) { f() }}
		ranA, ranB := false, false
		k.Add("a", func() { ranA = true })
		k.Add("b", func() { <-gate; ranB = true })
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := k.Wait(ctx); err != context.DeadlineExceeded {
			t.Fatalf("Wait = %v while key b works, want the context's deadline", err)
		}
		close(gate)
		if err := k.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		if !ranA || !ranB {
			t.Fatalf("Wait returned before every key's work ran (a %v, b %v)", ranA, ranB)
		}
	})
}

func TestKeyedPanicIsLoggedAndKeyGoesOn(t *testing.T) {
	t.Parallel()
	p := &panicProbe{}
	k := &Keyed[string, string]{Log: p.logger(), Name: func(s string) string { return "job " + s }, Run: p.run}
	k.Add("t", "a")
	k.Add("t", "bad")
	k.Add("t", "b")
	if err := k.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.check(t, "job bad")
}
