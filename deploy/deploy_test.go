// Package deploy holds the packaging files (compose.yaml, threadsmith.service;
// the Dockerfile is at the repository root, its build context). Its tests
// check them with the tools that read them, where those tools are installed.
package deploy

import (
	"context"
	"debug/elf"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/threadsmith/threadsmith/config"
)

// The sandbox's needs in a container, as the Dockerfile documents them.
var containerSecurityOpts = []string{"seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"}

func TestSystemdUnitVerifies(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze is not installed: the unit is not verified here")
	}
	unit, err := os.ReadFile("threadsmith.service")
	if err != nil {
		t.Fatal(err)
	}
	// verify wants ExecStart's program to exist: any executable stands in.
	text := strings.Replace(string(unit), "ExecStart=/usr/local/bin/threadsmith", "ExecStart="+os.Args[0], 1)
	path := filepath.Join(t.TempDir(), "threadsmith.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, analyze, "verify", path).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
	if !strings.Contains(string(unit), "\nKillMode=mixed\n") {
		t.Error("the unit lets systemd signal the agent's commands at once on stop (KillMode=mixed leaves them to the bot's graceful shutdown)")
	}
	for _, forbidden := range []string{"RestrictNamespaces=", "PrivateUsers=", "SystemCallFilter=", "ProtectKernelTunables=", "ProtectKernelLogs=", "ProtectProc="} {
		for _, line := range strings.Split(string(unit), "\n") {
			if strings.HasPrefix(line, forbidden) {
				t.Errorf("the unit sets %s, which breaks the agent's sandbox", line)
			}
		}
	}
}

func TestComposeFileRunsTheSandboxAsTheDockerfileSays(t *testing.T) {
	f := readCompose(t)
	bot, ok := f.Services["threadsmith"]
	if !ok {
		t.Fatal("compose.yaml has no threadsmith service")
	}
	docker, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range containerSecurityOpts {
		if !slices.Contains(bot.SecurityOpt, opt) {
			t.Errorf("compose.yaml's security_opt lacks %s", opt)
		}
		if !strings.Contains(string(docker), "--security-opt "+opt) {
			t.Errorf("the Dockerfile's run command lacks --security-opt %s", opt)
		}
	}
	// Each replica needs a data_dir of its own (one bot per data_dir): the
	// image's anonymous volume, never one named volume shared by all.
	if !strings.Contains(string(docker), "\nVOLUME /data\n") {
		t.Error("the Dockerfile declares no volume at /data (the data_dir)")
	}
	if slices.ContainsFunc(bot.Volumes, func(v string) bool { return strings.HasSuffix(v, ":/data") }) {
		t.Error("compose.yaml mounts one volume at /data for every replica: the second refuses to start")
	}
}

// compose is what the tests read of compose.yaml.
type compose struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		SecurityOpt []string          `yaml:"security_opt"`
		Volumes     []string          `yaml:"volumes"`
		Environment map[string]string `yaml:"environment"`
		DependsOn   map[string]struct {
			Condition string `yaml:"condition"`
		} `yaml:"depends_on"`
		Healthcheck struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
	} `yaml:"services"`
}

func readCompose(t *testing.T) compose {
	t.Helper()
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f compose
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return f
}

// The bot runs on the PostgreSQL service of the same file (replicas share
// it): it starts once the database answers, and its DATABASE_URL names the
// service, user and database the postgres service creates.
func TestComposeFileRunsTheBotOnItsPostgreSQL(t *testing.T) {
	f := readCompose(t)
	bot, db := f.Services["threadsmith"], f.Services["postgres"]
	if !strings.HasPrefix(db.Image, "postgres:") {
		t.Fatalf("compose.yaml has no postgres service (image %q)", db.Image)
	}
	if !slices.Contains(db.Healthcheck.Test, "pg_isready") {
		t.Errorf("the postgres service has no pg_isready health check: %v", db.Healthcheck.Test)
	}
	if c := bot.DependsOn["postgres"].Condition; c != "service_healthy" {
		t.Errorf("the bot depends on postgres with condition %q, want service_healthy", c)
	}
	dsn := bot.Environment["DATABASE_URL"]
	// The password is interpolated by compose; what is around it must match.
	u, err := url.Parse(strings.Replace(dsn, "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD in .env}", "secret", 1))
	if err != nil || u.Scheme != "postgres" {
		t.Fatalf("DATABASE_URL %q: %v", dsn, err)
	}
	pw, _ := u.User.Password()
	if u.Host != "postgres:5432" || u.User.Username() != db.Environment["POSTGRES_USER"] || pw != "secret" ||
		strings.TrimPrefix(u.Path, "/") != db.Environment["POSTGRES_DB"] {
		t.Errorf("DATABASE_URL %q does not reach the postgres service (user %q, db %q)", dsn, db.Environment["POSTGRES_USER"], db.Environment["POSTGRES_DB"])
	}
	if !strings.Contains(db.Environment["POSTGRES_PASSWORD"], "POSTGRES_PASSWORD") {
		t.Errorf("the database's password %q is not the one the bot's URL uses", db.Environment["POSTGRES_PASSWORD"])
	}
}

// The image builds and its binary runs, where a Docker engine is available.
func TestDockerImageBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not building the image")
	}
	docker, err := exec.LookPath("docker")
	if err != nil {
		t.Skip("docker is not installed: the image is not built here")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, docker, "info").CombinedOutput(); err != nil {
		t.Skipf("no Docker engine answers here (docker info: %v): the image is not built: %s", err, lastLine(out))
	}
	tag := "threadsmith-test:" + time.Now().Format("20060102150405")
	build := exec.CommandContext(ctx, docker, "build", "--build-arg", "VERSION=v0.0.0-test", "-t", tag, "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	defer exec.Command(docker, "rmi", "-f", tag).Run()
	out, err := exec.CommandContext(ctx, docker, "run", "--rm", tag, "-version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "threadsmith v0.0.0-test") {
		t.Fatalf("docker run %s -version: %v\n%s", tag, err, out)
	}
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	return strings.TrimSpace(s[strings.LastIndexByte(s, '\n')+1:])
}

// The config.yaml compose.yaml's header asks for — the example with its
// data_dir, http.listen and storage keys — is valid with the variables the
// compose file and its .env give.
func TestComposeConfigIsValid(t *testing.T) {
	b, err := os.ReadFile("../config.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	for old, repl := range map[string]string{
		"\ndata_dir: ./data ": "\ndata_dir: /data ",
		"\n  listen: \"\" ":   "\n  listen: \":9090\" ",
		"\n  driver: sqlite ": "\n  driver: postgres ",
		"\n  dsn: \"\" ":      "\n  dsn: ${DATABASE_URL} ",
	} {
		if !strings.Contains(text, old) {
			t.Fatalf("config.example.yaml has no %q to change as compose.yaml says", old)
		}
		text = strings.Replace(text, old, repl, 1)
	}
	env := map[string]string{
		"DATABASE_URL":    "postgres://threadsmith:secret@postgres:5432/threadsmith?sslmode=disable",
		"OPENAI_API_KEY":  "sk-x",
		"SLACK_BOT_TOKEN": "xoxb-x",
		"SLACK_APP_TOKEN": "xapp-x",
		"REPO_URL":        "https://git.example.com/app.git",
	}
	cfg, err := config.Parse(strings.NewReader(text), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("the compose config is invalid: %v", err)
	}
	if cfg.Storage.Driver != config.StoragePostgres || cfg.Storage.DSN != env["DATABASE_URL"] || cfg.DataDir != "/data" || cfg.HTTP.Listen != ":9090" {
		t.Fatalf("config: storage %+v, data_dir %s, http.listen %s", cfg.Storage, cfg.DataDir, cfg.HTTP.Listen)
	}
}

// Where no Docker engine runs, the image's build step still runs here as the
// Dockerfile writes it: a static binary (it runs on the slim image without
// Go's or C's libraries) that says the version given as a build argument.
//
// It rebuilds the standard library and every dependency without cgo
// (minutes with a cold cache), so it runs on request:
// THREADSMITH_DOCKERFILE_STEP=1. TestStaticBuildHasNoCgo is its quick part.
func TestDockerfileBuildStepMakesAStaticVersionedBinary(t *testing.T) {
	if os.Getenv("THREADSMITH_DOCKERFILE_STEP") != "1" {
		t.Skip("set THREADSMITH_DOCKERFILE_STEP=1 to run the Dockerfile's build step here (minutes with a cold cache)")
	}
	docker, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var step string
	for _, line := range strings.Split(string(docker), "\n") {
		if strings.HasPrefix(line, "RUN ") && strings.Contains(line, "go build") {
			step = strings.TrimPrefix(line, "RUN ")
		}
	}
	if step == "" {
		t.Fatal("the Dockerfile has no RUN … go build step")
	}
	out := t.TempDir()
	step = strings.NewReplacer("${VERSION}", "v0.0.0-test", "/out/", out+"/").Replace(step)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "sh", "-c", step)
	build.Dir = ".."
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", step, err, b)
	}
	bin := filepath.Join(out, "threadsmith")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary is linked dynamically (%v): it would not run on the slim image", p.Type)
		}
	}
	v, err := exec.CommandContext(ctx, bin, "-version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(v), "threadsmith v0.0.0-test ") {
		t.Fatalf("%s -version: %v %q", bin, err, v)
	}
}

// The image's binary is built with CGO_ENABLED=0 (the slim image has no C
// toolchain's libraries to spare): every package the program needs builds
// without cgo, and the version variable the build argument sets exists.
func TestStaticBuildHasNoCgo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	list := exec.CommandContext(ctx, "go", "list", "-e", "-deps", "-f", "{{if .Error}}{{.ImportPath}}: {{.Error}}{{end}}{{if .CgoFiles}}{{.ImportPath}} uses cgo{{end}}", "./cmd/bot")
	list.Dir = ".."
	list.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := list.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Fatalf("CGO_ENABLED=0 go list -deps ./cmd/bot: %v\n%s", err, out)
	}
	docker, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("../cmd/bot/version.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(docker), "CGO_ENABLED=0 go build") || !strings.Contains(string(docker), "-X main.version=${VERSION}") || !strings.Contains(string(src), "\nvar version string\n") {
		t.Fatal("the Dockerfile's build step and cmd/bot's version variable disagree")
	}
}
