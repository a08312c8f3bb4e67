package testwatch

import (
	"strings"
	"testing"
	"time"
)

// parked is a goroutine of this module blocked on a channel, as a hung test's
// helper would be.
func parked(stop <-chan struct{}, started chan<- struct{}) {
	close(started)
	<-stop
}

func TestReportListsTheTestFirstAndThisModulesGoroutines(t *testing.T) {
	stop := make(chan struct{})
	hung, started, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	go parked(stop, started)
	go func() {
		defer close(done)
		t.Run("hung", func(t *testing.T) { close(hung); <-stop })
	}()
	<-started
	<-hung
	r := Report(time.Minute)
	close(stop)
	<-done
	ti := strings.Index(r, "TestReportListsTheTestFirstAndThisModulesGoroutines.func")
	pi := strings.Index(r, "testwatch.parked")
	if ti < 0 || pi < 0 || ti > pi {
		t.Fatalf("the report lacks the hung test or the parked goroutine, or has them out of order (test at %d, parked at %d):\n%s", ti, pi, r)
	}
	if !strings.Contains(r, "1 test goroutines and 2 others") {
		t.Errorf("the report counts other goroutines than the hung test, its starter and the parked one (its own, or the runtime's):\n%s", r)
	}
	if !strings.HasSuffix(r, "the tests still run after 1m0s (test goroutines listed first, above)\n") {
		t.Errorf("the report does not end with its summary line (a CI log keeps the tail):\n%s", r)
	}
}
