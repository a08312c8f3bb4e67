package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// The bot's binary, built once for the tests that run it as an operator
// would, in a folder every user may traverse (one test runs it as another
// user).
var botBuild struct {
	once     sync.Once
	dir, bin string
	out      []byte
	err      error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if botBuild.dir != "" {
		os.RemoveAll(botBuild.dir)
	}
	os.Exit(code)
}

func buildBot(t *testing.T) string {
	t.Helper()
	botBuild.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if botBuild.dir, botBuild.err = os.MkdirTemp("", "threadsmith-deploy-"); botBuild.err != nil {
			return
		}
		if botBuild.err = os.Chmod(botBuild.dir, 0o755); botBuild.err != nil {
			return
		}
		botBuild.bin = filepath.Join(botBuild.dir, "threadsmith")
		botBuild.out, botBuild.err = exec.CommandContext(ctx, "go", "build", "-o", botBuild.bin, "../cmd/bot").CombinedOutput()
	})
	if botBuild.err != nil {
		t.Fatalf("go build: %v\n%s", botBuild.err, botBuild.out)
	}
	return botBuild.bin
}
