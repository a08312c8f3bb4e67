package main

import (
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"testing"
	"time"
)

func TestFloorPercent(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	for _, c := range []struct {
		live, roots uint64
		want        int
	}{
		{4 * mib, 0, 1500},       // 4 + 4×15 = 64
		{4 * mib, 4 * mib, 750},  // 4 + 8×7.5
		{3 * mib, 0, 1600},       // the minimum heap, 4 × 16, gets there first
		{0, 0, 1600},             // nothing live: the minimum heap
		{40 * mib, 0, 100},       // 40 + 40 ≥ 64: GOGC as usual
		{64 * mib, 1 * mib, 100}, // at the floor
		{200 * mib, 0, 100},      // above it
	} {
		got := floorPercent(c.live, c.roots, 64*mib, 100)
		if got != c.want {
			t.Errorf("floorPercent(live %d MiB, roots %d MiB) = %d, want %d", c.live/mib, c.roots/mib, got, c.want)
		}
		if goal := max(c.live+(c.live+c.roots)*uint64(got)/100, 4*mib*uint64(got)/100); c.live < 32*mib && (goal < 64*mib || goal > 65*mib) {
			t.Errorf("live %d MiB: goal with GOGC=%d is %d MiB, want the floor", c.live/mib, got, goal/mib)
		}
	}
}

// TestHeapFloorAfterEachCollection: after a collection the goal is the
// floor, not twice a small live heap, and it stays so collection after
// collection (the floor re-arms itself).
func TestHeapFloorAfterEachCollection(t *testing.T) {
	// Not parallel: it sets the collector's percent, which is the process's.
	const floor = 64 << 20
	f := newGCFloor(floor, 100)
	f.adjusted = make(chan struct{}, 1)
	f.adjust()
	f.arm()
	t.Cleanup(f.stop)
	goal := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}, {Name: "/gc/heap/live:bytes"}}
	for i := range 3 {
		runtime.GC()
		select {
		case <-f.adjusted:
		case <-time.After(10 * time.Second):
			t.Fatalf("collection %d: the floor was not adjusted after it", i+1)
		}
		metrics.Read(goal)
		if g, live := goal[0].Value.Uint64(), goal[1].Value.Uint64(); live < floor/4 && (g < floor || g > floor*9/8) {
			t.Errorf("collection %d: heap goal %d MiB with %d MiB live, want the floor, %d MiB", i+1, g>>20, live>>20, floor>>20)
		}
	}
}

// The operator's GOGC stands: with it set there is no floor, and GOGC is
// left as the runtime read it.
func TestHeapFloorOffWhenGOGCIsSet(t *testing.T) {
	t.Setenv("GOGC", "150")
	before := debug.SetGCPercent(150)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	if f := startHeapFloor(slog.New(slog.DiscardHandler)); f != nil {
		f.stop()
		t.Fatal("a heap floor with GOGC set")
	}
	if got := debug.SetGCPercent(150); got != 150 {
		t.Errorf("GOGC is %d after startHeapFloor, want the operator's 150", got)
	}
}
