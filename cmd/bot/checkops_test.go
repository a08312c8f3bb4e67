package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/sandbox"
)

// -check fails as the bot would without a platform to serve.
func TestCheckFailsWithNoPlatformEnabled(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t)
	cfg.Sandbox.Mode = config.SandboxNone
	cfg.Slack.Enabled = false
	cfg.Discord.Enabled = false
	ok, out := runCheck(t, cfg)
	if ok || !strings.Contains(out, errNoPlatform.Error()) || strings.Contains(out, "\nok\n") {
		t.Fatalf("check = %v, %q; want a failure naming the missing platform", ok, out)
	}
}

// -check creates nothing: not the data_dir, not the database, not the lock
// file, whether data_dir is there or not; it says the database is the first start's to create.
func TestCheckCreatesNothing(t *testing.T) {
	t.Parallel()
	cfg, _ := checkConfig(t) // the default sandbox, where this machine has one: it too creates nothing
	if _, err := sandbox.New(sandbox.Config{Mode: sandbox.Mode(cfg.Sandbox.Mode)}); err != nil {
		cfg.Sandbox.Mode = config.SandboxNone
	}
	parent := t.TempDir()
	cfg.DataDir = filepath.Join(parent, "state", "data")
	ok, out := runCheck(t, cfg)
	if !ok || !strings.Contains(out, "storage: sqlite "+filepath.Join(cfg.DataDir, "threadsmith.db")+" not there yet") {
		t.Fatalf("check = %v, %q; want ok, saying the database is not there yet", ok, out)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("-check created %v in %s", entries, parent)
	}

	// Nor in a data_dir that exists empty (systemd's StateDirectory=
	// makes it): no database, no lock file, no -wal.
	empty := cfg
	empty.DataDir = t.TempDir()
	if ok, out := runCheck(t, empty); !ok || !strings.Contains(out, "not there yet") {
		t.Fatalf("check in an empty data_dir = %v, %q; want ok, saying the database is not there yet", ok, out)
	}
	if entries, _ := os.ReadDir(empty.DataDir); len(entries) != 0 {
		t.Errorf("-check created %v in an empty data_dir", entries)
	}

	// A data_dir that cannot be created fails the check.
	if os.Geteuid() == 0 {
		return // root writes anywhere
	}
	if err := os.Chmod(parent, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(parent, 0o700)
	if ok, out := runCheck(t, cfg); ok || !strings.Contains(out, "data_dir: ") {
		t.Errorf("check = %v, %q; want data_dir's problem", ok, out)
	}
}
