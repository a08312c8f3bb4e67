package storagetest

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/transcript"
)

// CPUPerOp runs op in b's loop and reports, beside the wall time, the
// process's CPU time per op (cpu-µs/op): a shared machine stretches the
// first, and work on the collector's other core shows only in the second.
func CPUPerOp(b *testing.B, op func() error) {
	b.Helper()
	c0 := processCPU(b)
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU(b)-c0)/float64(b.N)/1e3, "cpu-µs/op")
}

// Resume is a resume of a session as the bridge does one: its entries read
// by load (LoadLiveEntries; LoadEntries to compare) and its context rebuilt.
// It fails unless want entries come back.
func Resume(ctx context.Context, load func(context.Context, string) ([]transcript.Entry, error), sessionID string, want int) func() error {
	return func() error {
		es, err := load(ctx, sessionID)
		if err != nil || len(es) != want {
			return fmt.Errorf("resume: %d entries, %v; want %d", len(es), err, want)
		}
		transcript.BuildContext(es)
		return nil
	}
}

// processCPU is the CPU time the process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
