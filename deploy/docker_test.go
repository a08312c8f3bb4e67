package deploy

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
)

func readDockerfile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// docker stop waits --stop-timeout (compose: stop_grace_period) before it
// kills: longer than the bot's default shutdown_grace, so that a graceful
// shutdown is not cut off. The image's version comes from a documented
// build argument.
func TestDockerRunGivesTheShutdownGrace(t *testing.T) {
	docker := readDockerfile(t, "../Dockerfile")
	grace := config.Default().ShutdownGrace
	m := regexp.MustCompile(`(?m)^#\s+docker run .*--stop-timeout (\d+)`).FindStringSubmatch(docker)
	if m == nil {
		t.Fatal("the Dockerfile's docker run example sets no --stop-timeout (Docker's default is 10s)")
	}
	if n, _ := strconv.Atoi(m[1]); time.Duration(n)*time.Second <= grace {
		t.Errorf("docker run --stop-timeout %s is no longer than shutdown_grace %v", m[1], grace)
	}
	compose, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m = regexp.MustCompile(`(?m)^\s+stop_grace_period: (\S+)`).FindStringSubmatch(string(compose))
	if m == nil {
		t.Fatal("compose.yaml sets no stop_grace_period")
	}
	if d, err := time.ParseDuration(m[1]); err != nil || d <= grace {
		t.Errorf("compose.yaml's stop_grace_period %s is no longer than shutdown_grace %v (%v)", m[1], grace, err)
	}
	if !regexp.MustCompile(`(?m)^#\s+docker build --build-arg VERSION=\S+ `).MatchString(docker) || !strings.Contains(docker, "\nARG VERSION=") {
		t.Error("the Dockerfile's build example does not pass the VERSION build argument it reads")
	}
}

// The image's health check is deploy/healthcheck.sh, copied in.
func TestDockerHealthCheckIsTheScript(t *testing.T) {
	docker := readDockerfile(t, "../Dockerfile")
	if !strings.Contains(docker, "\nCOPY deploy/healthcheck.sh /usr/local/bin/threadsmith-healthcheck\n") ||
		!regexp.MustCompile(`(?m)^\s+CMD \["/usr/local/bin/threadsmith-healthcheck"\]$`).MatchString(docker) {
		t.Fatal("the Dockerfile's HEALTHCHECK does not run deploy/healthcheck.sh")
	}
	if strings.Contains(docker, "127.0.0.1:9090") {
		t.Error("the Dockerfile still asks a fixed port")
	}
	if fi, err := os.Stat("healthcheck.sh"); err != nil || fi.Mode().Perm()&0o111 == 0 {
		t.Errorf("healthcheck.sh is not executable: %v %v", fi, err)
	}
}

// The health check asks /healthz where http.listen says, whatever port,
// not slack.listen, and fails when the bot does not answer 200.
func TestHealthCheckFollowsHTTPListen(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (the image has it): the health check is not run here")
	}
	serve := func(status int) (*httptest.Server, string) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/healthz" {
				http.NotFound(w, r)
				return
			}
			w.WriteHeader(status)
		}))
		t.Cleanup(srv.Close)
		_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
		return srv, port
	}
	_, up := serve(http.StatusOK)
	_, down := serve(http.StatusServiceUnavailable)
	run := func(cfg string) (int, string) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "config.yaml")
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "./healthcheck.sh")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "THREADSMITH_CONFIG=" + path}
		out, err := cmd.CombinedOutput()
		return exitCode(err), string(out)
	}
	for _, tc := range []struct {
		name, cfg string
		healthy   bool
	}{
		{"all interfaces", fmt.Sprintf("slack:\n  listen: \":1\"\nhttp:\n  listen: \":%s\"   # endpoints\n", up), true},
		{"loopback, quoted once", fmt.Sprintf("http:\n  public_url: \"\"\n  listen: '127.0.0.1:%s'\nslack:\n  listen: \":1\"\n", up), true},
		{"0.0.0.0", fmt.Sprintf("http:\n  listen: 0.0.0.0:%s\n", up), true},
		{"not ready is still alive, but 503 on /healthz is not", fmt.Sprintf("http:\n  listen: \":%s\"\n", down), false},
		{"nobody listening", "http:\n  listen: \"127.0.0.1:1\"\n", false},
		{"off", "http:\n  listen: \"\"   # off\nslack:\n  listen: \":1\"\n", true},
		{"absent", "data_dir: /data\n", true},
	} {
		code, out := run(tc.cfg)
		if (code == 0) != tc.healthy {
			t.Errorf("%s: exit %d (%s), want healthy=%v\n%s", tc.name, code, strings.TrimSpace(out), tc.healthy, tc.cfg)
		}
	}
	if code, out := run("http:\n  listen: ${LISTEN}\n"); code == 0 || !strings.Contains(out, "THREADSMITH_HEALTHZ_URL") {
		t.Errorf("http.listen from a variable: exit %d %q, want a failure naming THREADSMITH_HEALTHZ_URL", code, out)
	}
}

// The toolchain image builds on threadsmith's and keeps its user, entry
// point and health check.
func TestToolchainsDockerfileExtendsTheImage(t *testing.T) {
	text := readDockerfile(t, "toolchains.Dockerfile")
	var instr []string
	for _, line := range strings.Split(text, "\n") {
		if line != "" && !strings.HasPrefix(line, "#") && !strings.HasPrefix(line, " ") {
			instr = append(instr, strings.Fields(line)[0]+" "+strings.Join(strings.Fields(line)[1:], " "))
		}
	}
	if len(instr) == 0 || instr[0] != "FROM threadsmith" {
		t.Fatalf("toolchains.Dockerfile does not start FROM threadsmith: %q", instr)
	}
	if instr[len(instr)-1] != "USER threadsmith" {
		t.Errorf("toolchains.Dockerfile ends as %q: the bot would run as root", instr[len(instr)-1])
	}
	for _, in := range instr {
		for _, kw := range []string{"ENTRYPOINT", "CMD", "HEALTHCHECK"} {
			if strings.HasPrefix(in, kw+" ") {
				t.Errorf("toolchains.Dockerfile overrides the image's %s", kw)
			}
		}
	}
	if !strings.Contains(readDockerfile(t, "../Dockerfile"), "docker build -f deploy/toolchains.Dockerfile") {
		t.Error("the Dockerfile does not say how to add toolchains")
	}
}
