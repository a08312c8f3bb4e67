package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A second bot on the same data_dir — a real second process, as an operator
// would start it by mistake — exits 1 naming the directory and the first
// bot's pid, before it touches the database.
func TestASecondBotOnTheDataDirIsRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := buildBot(t)
	config := filepath.Join(t.TempDir(), "config.yaml")
	yaml := fmt.Sprintf("data_dir: %q\nllm: {base_url: %q, api_key: sk-x}\nsandbox: {mode: none}\nslack: {enabled: false}\nworkspace:\n  default_repo: app\n  repos: [{name: app, url: %q}]\n",
		e.cfg.DataDir, e.llm.URL(), e.remote.Path)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(filepath.Join(e.cfg.DataDir, "threadsmith.db"))

	out, err := exec.CommandContext(ctx, bin, "-config", config).CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("second bot: %v, want exit code 1\n%s", err, out)
	}
	abs, _ := filepath.Abs(e.cfg.DataDir)
	for _, want := range []string{abs, fmt.Sprintf("another threadsmith (pid %d)", os.Getpid()), "one bot per data_dir"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}
	if after, _ := os.Stat(filepath.Join(e.cfg.DataDir, "threadsmith.db")); before == nil || after == nil || !after.ModTime().Equal(before.ModTime()) {
		t.Error("the second bot touched the database")
	}

	// Once the first bot stopped, the data_dir is free again.
	e.stop()
	l, err := lockDataDir(e.cfg.DataDir)
	if err != nil {
		t.Fatalf("after the first bot stopped: %v", err)
	}
	l.release()
}

func TestVersionIsPrinted(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	bin := buildBot(t)
	out, err := exec.CommandContext(ctx, bin, "-version").CombinedOutput()
	if err != nil {
		t.Fatalf("-version: %v\n%s", err, out)
	}
	if line := strings.TrimSpace(string(out)); !strings.HasPrefix(line, "threadsmith ") || !strings.Contains(line, "go1.") || strings.Count(line, "\n") > 0 {
		t.Fatalf("-version printed %q, want one line: threadsmith <version> … go<version> os/arch", out)
	}
}
