package backoff

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// Each wait is between half and all of its step; the steps double from Min
// to Max and stay there; Reset starts again from Min.
func TestScheduleDoublesWithJitterUpToMax(t *testing.T) {
	t.Parallel()
	var b Backoff
	step := Min
	for i := range 20 {
		w := b.Next()
		if w < step/2 || w > step {
			t.Fatalf("wait %d is %v, want within [%v, %v]", i, w, step/2, step)
		}
		step = min(2*step, Max)
	}
	b.Reset()
	if w := b.Next(); w > Min {
		t.Fatalf("after Reset the wait is %v, want at most %v", w, Min)
	}
}

func TestSleepEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if !Sleep(context.Background(), time.Minute) {
			t.Fatal("a full sleep reported it was cut short")
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if Sleep(ctx, time.Hour) {
			t.Fatal("a sleep cut by its context reported it passed")
		}
	})
}
