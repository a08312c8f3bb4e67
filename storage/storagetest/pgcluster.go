package storagetest

import (
	"bytes"
	"errors"
	"fmt"
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
}

// StartCluster initdbs a cluster into a new temporary directory and starts
// it on a free port of 127.0.0.1. Run as root, it runs PostgreSQL as the
// postgres user (initdb refuses root). Stop removes everything.
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
	if os.Geteuid() == 0 {
		u, err := osuser.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("running as root needs the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	data := filepath.Join(dir, "data")
	if err := c.run("initdb", "-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c.opts = fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -c unix_socket_directories=%s -c max_connections=200", port, dir)
	if err := c.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c.DSN = fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	return c, nil
}

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

// Stop stops the cluster (pg_ctl stop, fast) and removes its directory.
func (c *Cluster) Stop() error {
	err := c.run("pg_ctl", "-D", filepath.Join(c.dir, "data"), "-m", "fast", "-w", "stop")
	return errors.Join(err, os.RemoveAll(c.dir))
}

func (c *Cluster) run(name string, args ...string) error {
	cmd := exec.Command(filepath.Join(c.bin, name), args...)
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
