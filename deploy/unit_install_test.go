package deploy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

// dynamicUID stands for the user systemd makes up for DynamicUser=: a uid of
// its range (61184–65519) that owns nothing on this machine.
const dynamicUID = 61234

// unit is what the simulation reads of threadsmith.service: the install
// steps of its header and the [Service] section's settings.
type unit struct {
	install []string            // the header's shell lines that fill /etc/threadsmith
	service map[string][]string // key -> values, in order
}

func readUnit(t *testing.T) unit {
	t.Helper()
	f, err := os.Open("threadsmith.service")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	u := unit{service: map[string][]string{}}
	section, header := "", true
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if header {
			if !strings.HasPrefix(line, "#") {
				header = false
			} else if cmd, ok := strings.CutPrefix(line, "#   "); ok && strings.Contains(cmd, "/etc/threadsmith") {
				u.install = append(u.install, cmd)
			}
		}
		switch {
		case strings.HasPrefix(line, "["):
			section = line
		case section == "[Service]" && strings.Contains(line, "=") && !strings.HasPrefix(line, "#"):
			k, v, _ := strings.Cut(line, "=")
			u.service[k] = append(u.service[k], v)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return u
}

func (u unit) one(t *testing.T, key string) string {
	t.Helper()
	v := u.service[key]
	if len(v) != 1 {
		t.Fatalf("threadsmith.service sets %s %d times, want once", key, len(v))
	}
	return v[0]
}

// The unit's documented install steps, run as written, then started as
// systemd starts it: as a made-up uid with no supplementary group and no
// right on the root-owned folders the steps made, with the unit's
// credentials, state directory, environment file, working directory and
// umask. The bot passes -check, starts, becomes ready and stops cleanly on
// SIGTERM; an invalid config exits with the status the unit does not restart.
func TestSystemdInstallStepsStartTheBotAsADynamicUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("not root: the dynamic user cannot be simulated (it needs setuid)")
	}
	u := readUnit(t)
	if u.one(t, "DynamicUser") != "yes" {
		t.Fatal("the unit does not run as a dynamic user: this simulation is of DynamicUser=yes")
	}

	// base stands for /: every absolute path of the unit and its steps below
	// /etc, /var/lib and /run is moved under it. It is traversable by all, as
	// / is.
	base, err := os.MkdirTemp("", "threadsmith-unit-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	if err := os.Chmod(base, 0o755); err != nil {
		t.Fatal(err)
	}
	rebase := strings.NewReplacer("/etc/threadsmith", base+"/etc/threadsmith", "/var/lib/", base+"/var/lib/", "/run/", base+"/run/").Replace

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := buildBot(t) // stands for /usr/local/bin/threadsmith

	llm := llmfake.New(t)
	sl := slackfake.New(t)
	listen := freeAddr(t)
	// The repository, a remote the service's user may read (a copy it owns:
	// git refuses a repository owned by another user).
	remote := filepath.Join(base, "srv/app.git")
	seed := gitremote.NewBare(t, gitremote.Options{Files: map[string]string{"README": "app"}})
	if err := os.MkdirAll(filepath.Dir(remote), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, "cp", "-a", seed.Path, remote).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	if out, err := exec.CommandContext(ctx, "chown", "-R", fmt.Sprintf("%d:%d", dynamicUID, dynamicUID), remote).CombinedOutput(); err != nil {
		t.Fatalf("chown: %v %s", err, out)
	}
	stateDir := "/var/lib/" + u.one(t, "StateDirectory")
	cfg := fmt.Sprintf(`data_dir: %s
http:
  listen: %q
llm:
  base_url: %s
  api_key: ${OPENAI_API_KEY}
  model: fake-model
sandbox:
  mode: none
slack:
  bot_token: ${SLACK_BOT_TOKEN}
  app_token: ${SLACK_APP_TOKEN}
  api_url: %s
workspace:
  default_repo: app
  repos:
    - {name: app, url: %s}
`, rebase(stateDir), listen, llm.URL(), sl.APIURL(), remote)

	// The install steps, as root, from a folder holding the operator's
	// config.yaml, with the secrets in the shell's environment.
	work := t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if len(u.install) == 0 {
		t.Fatal("the unit's header shows no install step for /etc/threadsmith")
	}
	secrets := []string{"OPENAI_API_KEY=sk-unit", "SLACK_BOT_TOKEN=" + sl.BotToken(), "SLACK_APP_TOKEN=" + sl.AppToken()}
	for _, step := range u.install {
		sh := exec.CommandContext(ctx, "sh", "-c", rebase(step))
		sh.Dir = work
		sh.Env = append([]string{"PATH=" + os.Getenv("PATH")}, secrets...)
		if out, err := sh.CombinedOutput(); err != nil {
			t.Fatalf("install step %q: %v\n%s", step, err, out)
		}
	}
	etc := filepath.Join(base, "etc/threadsmith")
	if fi, err := os.Stat(etc); err != nil || fi.Mode().Perm() != 0o750 || fi.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Fatalf("the steps made %s: %v %v; want a root-owned folder of mode 0750", etc, fi, err)
	}

	// What systemd does before ExecStart=.
	uid := uint32(dynamicUID)
	var env []string
	for _, file := range u.service["EnvironmentFile"] {
		b, err := os.ReadFile(rebase(strings.TrimPrefix(file, "-"))) // read by systemd, as root
		if err != nil {
			t.Fatalf("EnvironmentFile=%s: %v", file, err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				env = append(env, line)
			}
		}
	}
	for _, s := range secrets {
		if !slices.Contains(env, s) {
			t.Fatalf("the environment file lacks %s: %q", strings.SplitN(s, "=", 2)[0], env)
		}
	}
	mode, err := strconv.ParseUint(u.one(t, "StateDirectoryMode"), 8, 32)
	if err != nil {
		t.Fatal(err)
	}
	mkdirOwned(t, rebase(stateDir), os.FileMode(mode), uid)
	creds := filepath.Join(base, "run/credentials/threadsmith.service")
	mkdirOwned(t, creds, 0o700, uid)
	for _, lc := range u.service["LoadCredential"] {
		id, src, ok := strings.Cut(lc, ":")
		if !ok {
			t.Fatalf("LoadCredential=%s names no file", lc)
		}
		b, err := os.ReadFile(rebase(src)) // read by systemd, as root
		if err != nil {
			t.Fatalf("LoadCredential=%s: %v", lc, err)
		}
		dst := filepath.Join(creds, id)
		if err := os.WriteFile(dst, b, 0o400); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(dst, int(uid), int(uid)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(creds, 0o500); err != nil {
		t.Fatal(err)
	}
	env = append(env, "PATH="+os.Getenv("PATH"), "HOME=/", "CREDENTIALS_DIRECTORY="+creds, "STATE_DIRECTORY="+rebase(stateDir))
	umask := u.one(t, "UMask")
	execStart := strings.Fields(u.one(t, "ExecStart"))
	if execStart[0] != "/usr/local/bin/threadsmith" {
		t.Fatalf("ExecStart runs %s, not the binary the steps install", execStart[0])
	}
	for i := range execStart {
		execStart[i] = strings.NewReplacer("${CREDENTIALS_DIRECTORY}", creds, "%d", creds).Replace(rebase(execStart[i]))
	}
	asService := func(ctx context.Context, args ...string) *exec.Cmd {
		// sh sets the unit's umask, then becomes the bot.
		cmd := exec.CommandContext(ctx, "sh", append([]string{"-c", "umask " + umask + ` && exec "$0" "$@"`, bin}, args...)...)
		cmd.Dir = rebase(u.one(t, "WorkingDirectory"))
		cmd.Env = env
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid, Groups: []uint32{}}}
		return cmd
	}

	// The simulation withholds what systemd withholds: the service's user
	// cannot read the config where the steps put it.
	short, cancelShort := context.WithTimeout(ctx, 30*time.Second)
	out, err := asService(short, "-config", filepath.Join(etc, "config.yaml")).CombinedOutput()
	cancelShort()
	if code := exitCode(err); code != 2 || !strings.Contains(string(out), "permission denied") {
		t.Fatalf("as the service's user, reading %s/config.yaml: exit %d, %s; want exit 2, permission denied", etc, code, out)
	}

	out, err = asService(ctx, append(execStart[1:], "-check")...).CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "\nok") {
		t.Fatalf("ExecStart= -check as the service's user: %v\n%s", err, out)
	}

	// The bot's log goes to a file: a pipe would keep Wait waiting for
	// whatever inherited it.
	logs, err := os.Create(filepath.Join(t.TempDir(), "bot.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logs.Close()
	logText := func() string { b, _ := os.ReadFile(logs.Name()); return string(b) }
	bot := asService(ctx, execStart[1:]...)
	bot.Stdout, bot.Stderr = logs, logs
	if err := bot.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- bot.Wait() }()
	ready, cancelReady := context.WithTimeout(ctx, time.Minute)
	err = waitReady(ready, "http://"+listen+"/readyz", done)
	cancelReady()
	if errors.Is(err, context.DeadlineExceeded) {
		bot.Process.Kill()
		<-done
	}
	if err != nil {
		t.Fatalf("the bot did not become ready: %v\n%s", err, logText())
	}
	db := filepath.Join(rebase(stateDir), "threadsmith.db")
	if fi, err := os.Stat(db); err != nil || fi.Sys().(*syscall.Stat_t).Uid != uid {
		t.Errorf("the database in the state directory: %v %v; want a file of the service's user", fi, err)
	}
	bot.Process.Signal(syscall.SIGTERM)
	if err := <-done; err != nil {
		t.Fatalf("after SIGTERM: %v\n%s", err, logText())
	}

	// An invalid config: exit 2, which the unit does not restart.
	if err := os.Chmod(creds, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(creds, "config.yaml"), []byte(cfg+"sandbox_mode: none\n"), 0o400); err != nil {
		t.Fatal(err)
	}
	out, err = asService(ctx, execStart[1:]...).CombinedOutput()
	if code := exitCode(err); code != 2 || !strings.Contains(string(out), "sandbox_mode") {
		t.Fatalf("with an unknown key: exit %d, %s; want exit 2 naming the key", code, out)
	}
	if u.one(t, "Restart") != "on-failure" || !slices.Contains(strings.Fields(u.one(t, "RestartPreventExitStatus")), "2") {
		t.Errorf("the unit restarts an invalid config (Restart=%v, RestartPreventExitStatus=%v)", u.service["Restart"], u.service["RestartPreventExitStatus"])
	}
}

func mkdirOwned(t *testing.T, dir string, mode os.FileMode, uid uint32) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil { // past the umask
		t.Fatal(err)
	}
	if err := os.Chown(dir, int(uid), int(uid)); err != nil {
		t.Fatal(err)
	}
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// freeAddr is a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitReady asks url until it answers 200, the process ends (done, then
// received) or ctx ends.
func waitReady(ctx context.Context, url string, done <-chan error) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case err := <-done:
			return fmt.Errorf("it exited: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}
