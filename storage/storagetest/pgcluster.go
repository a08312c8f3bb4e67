package storagetest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	osuser "os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// Environment variables of the PostgreSQL half of the suite.
const (
	// EnvPostgresDSN names a PostgreSQL database the suite may use (it
	// creates and drops one schema per test in it).
	EnvPostgresDSN = "THREADSMITH_TEST_POSTGRES"
	// EnvRequirePostgres=1 makes the PostgreSQL half fail instead of skip
	// when it cannot run; with no DSN set, the suite starts a throwaway
	// cluster itself (StartCluster).
	EnvRequirePostgres = "THREADSMITH_REQUIRE_POSTGRES"
	// EnvPostgresBin overrides the directory of initdb and pg_ctl.
	EnvPostgresBin = "THREADSMITH_POSTGRES_BIN"
)

// DefaultPostgresBin is Debian's PostgreSQL 15.
const DefaultPostgresBin = "/usr/lib/postgresql/15/bin"

// Cluster is a throwaway PostgreSQL cluster in a temporary directory,
// listening on 127.0.0.1 only.
type Cluster struct {
	DSN  string // superuser connection to the postgres database
	dir  string
	bin  string
	opts string // the server's options (port, sockets)
	cred *syscall.Credential

	// The reaper: a shell outside the test's process group that waits for
	// EOF on its stdin, then stops the server (if one runs) and removes dir.
	// Only this process holds the pipe's write end, so it reads EOF when
	// Stop closes it or when the process dies in any way (a panic, a test
	// timeout, kill -9), and no server or directory outlives the tests.
	reaper     *exec.Cmd
	reaperPipe io.WriteCloser
}

// reaperScript runs as the reaper (see Cluster.reaper); $1 is the cluster's
// directory. SIGQUIT is PostgreSQL's immediate shutdown.
const reaperScript = `trap '' HUP INT QUIT TERM PIPE
cat >/dev/null
pid=$(head -n 1 "$1/data/postmaster.pid" 2>/dev/null)
if [ -n "$pid" ] && kill -QUIT "$pid" 2>/dev/null; then
	i=0
	while kill -0 "$pid" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
	kill -KILL "$pid" 2>/dev/null
fi
rm -rf "$1"`

// StartCluster initdbs a cluster into a new temporary directory and starts
// it on a free port of 127.0.0.1. Run as root, it runs PostgreSQL as the
// postgres user (initdb refuses root), which must be able to reach the
// temporary directory (TMPDIR). Stop removes everything; so does the
// process's death, whatever its cause.
func StartCluster() (*Cluster, error) {
	bin := os.Getenv(EnvPostgresBin)
	if bin == "" {
		bin = DefaultPostgresBin
	}
	if _, err := os.Stat(filepath.Join(bin, "initdb")); err != nil {
		return nil, fmt.Errorf("no PostgreSQL server binaries in %s (set %s): %w", bin, EnvPostgresBin, err)
	}
	dir, err := os.MkdirTemp("", "threadsmith-pg-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, bin: bin}
	if err := c.startReaper(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	if err := c.init(); err != nil {
		return nil, errors.Join(err, c.reap())
	}
	return c, nil
}

// init runs initdb and starts the server.
func (c *Cluster) init() error {
	if os.Geteuid() == 0 {
		u, err := osuser.Lookup("postgres")
		if err != nil {
			return fmt.Errorf("running as root, the throwaway PostgreSQL runs as the postgres user (initdb refuses root), and there is none (install Debian's postgresql, or run as another user): %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(c.dir, uid, gid); err != nil {
			return err
		}
		if err := c.runAs("/bin/sh", "-c", `cd "$0" && test -w .`, c.dir); err != nil {
			return fmt.Errorf("running as root, the throwaway PostgreSQL runs as the postgres user, which cannot reach its directory %s "+
				"(every parent must be searchable by postgres: set TMPDIR to a directory it can reach, such as /tmp)", c.dir)
		}
	}
	data := filepath.Join(c.dir, "data")
	if err := c.run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	c.opts = fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories=%s -c max_connections=200", port, c.dir)
	if err := c.Start(); err != nil {
		return err
	}
	c.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return nil
}

func (c *Cluster) startReaper() error {
	cmd := exec.Command("/bin/sh", "-c", reaperScript, "reaper", c.dir)
	// Its own process group: a ^C to the tests' group does not reach it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	w, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the throwaway PostgreSQL's reaper: %w", err)
	}
	c.reaper, c.reaperPipe = cmd, w
	return nil
}

// reap has the reaper stop the server, if it runs, and remove the directory,
// and waits for it.
func (c *Cluster) reap() error {
	c.reaperPipe.Close()
	err := c.reaper.Wait()
	if _, serr := os.Stat(c.dir); !errors.Is(serr, os.ErrNotExist) {
		err = errors.Join(err, fmt.Errorf("the throwaway PostgreSQL's directory %s is still there", c.dir))
	}
	return err
}

// Dir is the cluster's directory (its data directory is Dir()/data).
func (c *Cluster) Dir() string { return c.dir }

// Start starts the cluster's server (again, after Crash).
func (c *Cluster) Start() error {
	err := c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-l", filepath.Join(c.dir, "server.log"), "-o", c.opts, "-w", "-t", "60", "start")
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(c.dir, "server.log"))
		return fmt.Errorf("%w\n%s", err, log)
	}
	return nil
}

// Crash stops the server the way a crash does (pg_ctl stop -m immediate: no
// checkpoint; the next start replays the WAL).
func (c *Cluster) Crash() error {
	return c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "immediate", "-w", "stop")
}

// Stop stops the cluster (pg_ctl stop, fast; immediately if that fails) and
// removes its directory.
func (c *Cluster) Stop() error {
	err := c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "fast", "-w", "stop")
	return errors.Join(err, c.reap())
}

func (c *Cluster) run(name string, args ...string) error {
	return c.runAs(filepath.Join(c.bin, name), args...)
}

func (c *Cluster) runAs(path string, args ...string) error {
	name := filepath.Base(path)
	cmd := exec.Command(path, args...)
	cmd.Dir = c.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w\n%s", name, err, out.Bytes())
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
