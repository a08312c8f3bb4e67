package main

import (
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The collector's heap floor. A freshly started bot has a live heap of a few
// MB, so with GOGC=100 its collector runs every few MB allocated: its first
// burst of mentions (200 at once) went through 3–7 collections before the
// last acknowledgement, where a process that had warmed up had none, and the
// collections' CPU and pauses were the difference. Below the floor the goal
// is the floor; above it (a live heap of half the floor or more) GOGC=100
// works as usual. The price is up to the floor in heap the collector leaves
// for later: 64 MiB, next to a process that runs git and holds sessions.
//
// An operator who sets GOGC keeps it, and the floor is off; GOMEMLIMIT caps
// the goal as it always does, floor or not.
const gcHeapFloor = 64 << 20

var gcFloorOnce sync.Once

// keepHeapFloor keeps the heap floor for the life of the process (once,
// whatever Mains it runs) unless GOGC is set.
func keepHeapFloor(log *slog.Logger) {
	gcFloorOnce.Do(func() { startHeapFloor(log) })
}

// startHeapFloor starts the floor and returns it, or nil when GOGC is set.
func startHeapFloor(log *slog.Logger) *gcFloor {
	if v := os.Getenv("GOGC"); v != "" {
		log.Info("no heap floor: GOGC is set", "GOGC", v)
		return nil
	}
	f := newGCFloor(gcHeapFloor, 100)
	f.adjust()
	f.arm()
	log.Debug("heap floor", "bytes", gcHeapFloor)
	return f
}

// gcFloor sets GOGC after each collection so that the next goal is at least
// floor: the live heap is only known after a collection, and the percent
// that gives the floor changes with it.
type gcFloor struct {
	floor   uint64
	base    int // GOGC at or above the floor
	samples []metrics.Sample

	mu       sync.Mutex
	stopped  bool          // no more adjusting (tests)
	adjusted chan struct{} // told after each collection's adjust (tests), if not nil
}

func newGCFloor(floor uint64, base int) *gcFloor {
	return &gcFloor{floor: floor, base: base, samples: []metrics.Sample{
		{Name: "/gc/heap/live:bytes"},
		{Name: "/gc/scan/stack:bytes"},
		{Name: "/gc/scan/globals:bytes"},
	}}
}

// sentinel is what the collector frees to say a cycle ended: big enough and
// with a pointer, so that it is not batched with other tiny objects.
type sentinel struct {
	_ *int
	_ [16]byte
}

// arm has the next collection call adjust, then arm again.
func (f *gcFloor) arm() {
	runtime.AddCleanup(new(sentinel), func(f *gcFloor) {
		if f.adjust() {
			f.arm()
			if f.adjusted != nil {
				select {
				case f.adjusted <- struct{}{}:
				default:
				}
			}
		}
	}, f)
}

// adjust sets GOGC for the live heap the last collection found, and reports
// whether to go on.
func (f *gcFloor) adjust() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.stopped {
		return false
	}
	metrics.Read(f.samples)
	// Set each time, not only when it changes: cheap (once per cycle), and
	// right again after anyone else set it.
	debug.SetGCPercent(floorPercent(f.samples[0].Value.Uint64(), f.samples[1].Value.Uint64()+f.samples[2].Value.Uint64(), f.floor, f.base))
	return true
}

// stop ends the adjusting and sets GOGC back to base.
func (f *gcFloor) stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	debug.SetGCPercent(f.base)
}

// floorPercent is the smallest GOGC (base at least) whose goal reaches
// floor. The runtime's goal is the larger of live + (live + roots) ×
// GOGC/100 and its minimum heap, 4 MiB × GOGC/100: whichever reaches the
// floor first sets it (a small live heap with few roots: the minimum).
func floorPercent(live, roots, floor uint64, base int) int {
	if live >= floor {
		return base
	}
	scan := max(live+roots, 1)
	byLive := ((floor-live)*100 + scan - 1) / scan             // rounded up
	byMin := (floor*100 + runtimeHeapMin - 1) / runtimeHeapMin // rounded up
	return max(base, int(min(byLive, byMin)))
}

// runtimeHeapMin is the runtime's minimum heap goal at GOGC=100
// (defaultHeapMinimum), which it scales with GOGC.
const runtimeHeapMin = 4 << 20
