package bridge

import (
	"os"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/testwatch"
)

// A test that hangs (in CI the package once ran into go test's 10-minute
// timeout, and the log kept only the tail of the runtime's dump) is named,
// with the lines this module's goroutines wait on, after 7 minutes.
func TestMain(m *testing.M) { os.Exit(testwatch.Run(m, 7*time.Minute)) }
