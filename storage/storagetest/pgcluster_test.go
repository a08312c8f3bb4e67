package storagetest_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/storage/storagetest"
)

// needClusterBinaries skips t without PostgreSQL's server binaries, unless
// PostgreSQL is required.
func needClusterBinaries(t *testing.T) {
	t.Helper()
	bin := os.Getenv(storagetest.EnvPostgresBin)
	if bin == "" {
		bin = storagetest.DefaultPostgresBin
	}
	if _, err := os.Stat(filepath.Join(bin, "initdb")); err != nil && os.Getenv(storagetest.EnvRequirePostgres) != "1" {
		t.Skipf("no PostgreSQL server binaries in %s", bin)
	}
}

const envClusterChild = "THREADSMITH_TEST_CLUSTER_CHILD"

// TestClusterChild is the process TestClusterGoneWhenTheProcessDies kills:
// it starts a cluster, says where, and waits.
func TestClusterChild(t *testing.T) {
	if os.Getenv(envClusterChild) != "1" {
		t.Skip("the child of TestClusterGoneWhenTheProcessDies")
	}
	c, err := storagetest.StartCluster()
	if err != nil {
		t.Fatal(err)
	}
	pidFile, err := os.ReadFile(filepath.Join(c.Dir(), "data", "postmaster.pid"))
	if err != nil {
		c.Stop()
		t.Fatal(err)
	}
	pid, _, _ := strings.Cut(string(pidFile), "\n")
	fmt.Printf("cluster %s %s\n", c.Dir(), pid)
	io.Copy(io.Discard, os.Stdin) // until killed
	c.Stop()
}

// A test process that dies without stopping its cluster (a panic, a test
// timeout, kill -9) leaves no server running and no directory behind.
func TestClusterGoneWhenTheProcessDies(t *testing.T) {
	needClusterBinaries(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestClusterChild$")
	cmd.Env = append(os.Environ(), envClusterChild+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var dir string
	var pid int
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "cluster" {
			dir = f[1]
			pid, _ = strconv.Atoi(f[2])
			break
		}
	}
	if dir == "" || pid == 0 {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the child started no cluster")
	}
	t.Cleanup(func() { // whatever the verdict, leave nothing behind
		syscall.Kill(pid, syscall.SIGQUIT)
		os.RemoveAll(dir)
	})
	cmd.Process.Kill()
	cmd.Wait()

	deadline := time.Now().Add(30 * time.Second)
	for {
		_, statErr := os.Stat(dir)
		gone := errors.Is(statErr, os.ErrNotExist)
		alive := syscall.Kill(pid, 0) == nil
		if gone && !alive {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after its test process was killed: directory %s gone: %v, server %d running: %v", dir, gone, pid, alive)
		}
		time.Sleep(50 * time.Millisecond) // polling another process: nothing to wait on
	}
}

// Run as root, a temporary directory the postgres user cannot reach is said
// plainly, and nothing is left behind.
func TestClusterSaysWhenPostgresCannotReachTMPDIR(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root runs the cluster as another user")
	}
	needClusterBinaries(t)
	tmp := t.TempDir() // 0700, root's
	t.Setenv("TMPDIR", tmp)
	c, err := storagetest.StartCluster()
	if err == nil {
		c.Stop()
		t.Fatal("started a cluster in a directory postgres cannot reach")
	}
	if !strings.Contains(err.Error(), "postgres user, which cannot reach") || !strings.Contains(err.Error(), "TMPDIR") {
		t.Errorf("error = %v, want it to say the postgres user cannot reach the directory and to name TMPDIR", err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "threadsmith-pg-*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}
