// Package testwatch turns a test binary that hangs into one that says where.
//
// When a package's tests run past go test's -timeout, the test binary dumps
// every goroutine, runtime and library ones included, and CI logs keep only
// the tail of that dump: the test that hung and the line it waits on are
// lost. Main runs the tests under a watchdog that, well before that timeout,
// prints only the goroutines running this module's code — the running tests
// first — and exits. Use it in a package's TestMain:
//
//	func TestMain(m *testing.M) { os.Exit(testwatch.Run(m, 7*time.Minute)) }
package testwatch

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Module is the import path prefix whose frames make a goroutine worth
// printing.
const Module = "github.com/threadsmith/threadsmith/"

// Run runs m under a watchdog of limit (THREADSMITH_TEST_WATCHDOG, a Go
// duration, overrides it; "0" turns it off) and returns m's exit code. If the
// tests run longer, the watchdog prints Report and exits the process with 3.
// limit is meant for go test's default -timeout of 10 minutes: another
// -timeout scales it (-timeout 30m, three times limit; -timeout 0, no
// watchdog), so that a longer run asked for is not cut short.
func Run(m *testing.M, limit time.Duration) int {
	if !flag.Parsed() {
		flag.Parse()
	}
	if f := flag.Lookup("test.timeout"); f != nil {
		if g, ok := f.Value.(flag.Getter); ok {
			if d, ok := g.Get().(time.Duration); ok {
				limit = scaled(limit, d)
			}
		}
	}
	if s := os.Getenv("THREADSMITH_TEST_WATCHDOG"); s != "" {
		if d, err := time.ParseDuration(s); err == nil {
			limit = d
		}
	}
	if limit > 0 {
		t := time.AfterFunc(limit, func() {
			fmt.Fprint(os.Stderr, Report(limit))
			os.Exit(3)
		})
		defer t.Stop()
	}
	return m.Run()
}

// defaultTimeout is go test's -timeout when none is given.
const defaultTimeout = 10 * time.Minute

// scaled is limit for a test binary run with -test.timeout timeout.
func scaled(limit, timeout time.Duration) time.Duration {
	if timeout == defaultTimeout {
		return limit
	}
	return time.Duration(float64(limit) * float64(timeout) / float64(defaultTimeout))
}

// Report describes the goroutines running this module's code, the tests'
// own goroutines first.
func Report(limit time.Duration) string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var tests, others []string
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		s := string(g)
		// The main goroutine (TestMain → Run → m.Run) waits on the tests
		// and says nothing of them.
		if !strings.Contains(s, Module) || strings.Contains(s, "testwatch.Report") || strings.Contains(s, "testing.(*M).Run(") {
			continue
		}
		if strings.Contains(s, "testing.tRunner") {
			tests = append(tests, s)
		} else {
			others = append(others, s)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\ntestwatch: the tests still run after %v; %d test goroutines and %d others run this module's code:\n\n",
		limit, len(tests), len(others))
	for _, s := range append(tests, others...) {
		b.WriteString(s)
		b.WriteString("\n\n")
	}
	fmt.Fprintf(&b, "testwatch: the tests still run after %v (test goroutines listed first, above)\n", limit)
	return b.String()
}
