package testwatch

import (
	"errors"
	"flag"
	"os"
	"os/exec"
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

func TestMain(m *testing.M) { os.Exit(Run(m, 0)) }

// TestHangsForTheWatchdog hangs when TestWatchdogNamesTheHungTestAndExits
// runs it in a child process; otherwise it does nothing.
func TestHangsForTheWatchdog(t *testing.T) {
	if os.Getenv("THREADSMITH_TESTWATCH_HANG") == "" {
		t.Skip("run by TestWatchdogNamesTheHungTestAndExits")
	}
	select {}
}

// A package whose test hangs exits with 3 once the watchdog's time
// (THREADSMITH_TEST_WATCHDOG) is up, and its stderr names the test.
func TestWatchdogNamesTheHungTestAndExits(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHangsForTheWatchdog$", "-test.timeout=60s")
	cmd.Env = append(os.Environ(), "THREADSMITH_TESTWATCH_HANG=1", "THREADSMITH_TEST_WATCHDOG=500ms")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("the hung child ended with %v, want exit code 3\n%s", err, stderr.String())
	}
	if s := stderr.String(); !strings.Contains(s, "testwatch.TestHangsForTheWatchdog") || !strings.Contains(s, "the tests still run after 500ms") {
		t.Errorf("the report does not name the hung test or the limit:\n%s", s)
	}
}

// A -timeout other than go test's default moves the watchdog with it: a run
// given 30 minutes is not cut at 9.
func TestWatchdogFollowsTheTimeout(t *testing.T) {
	for _, c := range []struct{ timeout, want time.Duration }{
		{10 * time.Minute, 9 * time.Minute},
		{30 * time.Minute, 27 * time.Minute},
		{5 * time.Minute, 270 * time.Second},
		{0, 0},
	} {
		if got := scaled(9*time.Minute, c.timeout); got != c.want {
			t.Errorf("scaled(9m, -timeout %v) = %v, want %v", c.timeout, got, c.want)
		}
	}
	// In the binary: this test runs with go test's -timeout; Run saw it.
	if f := flag.Lookup("test.timeout"); f == nil || f.Value.String() == "" {
		t.Fatal("no -test.timeout flag to scale by")
	}
}
