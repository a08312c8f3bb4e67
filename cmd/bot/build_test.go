package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/testwatch"
)

// The bot's own binary, built once for every test of this package that runs
// it as an operator would: each build links the whole program again, so
// the tests share one build instead of paying for their own.
var botBuild struct {
	once     sync.Once
	dir, bin string
	out      []byte
	err      error
}

func TestMain(m *testing.M) {
	// go test's own timeout is 10 minutes; a hang says where well before.
	code := testwatch.Run(m, 9*time.Minute)
	if botBuild.dir != "" {
		os.RemoveAll(botBuild.dir)
	}
	os.Exit(code)
}

// buildBot returns the path of this command compiled (once per test process,
// shared by every test: none writes to it). The build has its own deadline
// (a caller's may be short) and lives in a directory of the process.
func buildBot(t *testing.T) string {
	t.Helper()
	botBuild.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if botBuild.dir, botBuild.err = os.MkdirTemp("", "threadsmith-bot-"); botBuild.err != nil {
			return
		}
		botBuild.bin = filepath.Join(botBuild.dir, "bot")
		botBuild.out, botBuild.err = exec.CommandContext(ctx, "go", "build", "-o", botBuild.bin, ".").CombinedOutput()
	})
	if botBuild.err != nil {
		t.Fatalf("go build: %v\n%s", botBuild.err, botBuild.out)
	}
	return botBuild.bin
}
