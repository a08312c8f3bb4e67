package workspace

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// niceOf reads the nice value (field 19) of a /proc/<pid>/stat or
// /proc/thread-self/stat file.
func niceOf(t *testing.T, stat string) int {
	t.Helper()
	b, err := os.ReadFile(stat)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	// Fields after the command name, which is in parentheses and may hold
	// spaces: state is field 3, nice field 19.
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	n, err := strconv.Atoi(f[19-3])
	if err != nil {
		t.Fatalf("%s: %q: %v", stat, s, err)
	}
	return n
}

// TestGitRunsAtLowerPriority: every git process the bot starts, and what it
// starts in turn, runs at nice +10 relative to the bot, from its first
// instruction; the bot's own threads keep their priority. The "git" here
// is a script that reports its own nice value and that of the process it
// starts (as git starts upload-pack or ssh), read from /proc.
func TestGitRunsAtLowerPriority(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	own := niceOf(t, "/proc/thread-self/stat")
	if own > 19-gitNiceIncrement {
		t.Skipf("the test runs at nice %d already: git's cannot be %d higher", own, gitNiceIncrement)
	}
	bin := t.TempDir()
	script := "#!/bin/sh\n" +
		"read -r s < /proc/$$/stat; set -- ${s##*)}; echo \"${17}\"\n" +
		"sh -c 'read -r s < /proc/$$/stat; set -- ${s##*)}; echo \"${17}\"'\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))

	g := &gitRunner{author: bot, timeout: 20e9}
	want := strconv.Itoa(own+gitNiceIncrement) + "\n"
	for range 20 {
		out, err := g.run(context.Background(), gitCall{dir: bin, gitDir: bin, args: []string{"status"}})
		if err != nil {
			t.Fatal(err)
		}
		if out != want+want {
			t.Fatalf("git and its child ran at nice %q, want %q each (the bot is at %d)", out, want, own)
		}
	}

	// The threads git was started from are gone: goroutines that lock a
	// thread now all get one at the bot's priority.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var got []int
	for range 32 {
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			n := niceOf(t, "/proc/thread-self/stat")
			mu.Lock()
			got = append(got, n)
			mu.Unlock()
		})
	}
	wg.Wait()
	for _, n := range got {
		if n != own {
			t.Fatalf("a thread of the bot runs at nice %d after git calls, want %d", n, own)
		}
	}
	raw, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil || 20-raw != own {
		t.Fatalf("the test's thread is at nice %d (err %v), want %d", 20-raw, err, own)
	}
}
