// Package deploy holds the packaging files (compose.yaml, threadsmith.service;
// the Dockerfile is at the repository root, its build context). Its tests
// check them with the tools that read them, where those tools are installed.
package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
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
	for _, forbidden := range []string{"RestrictNamespaces=", "PrivateUsers=", "SystemCallFilter=", "ProtectKernelTunables=", "ProtectKernelLogs=", "ProtectProc="} {
		for _, line := range strings.Split(string(unit), "\n") {
			if strings.HasPrefix(line, forbidden) {
				t.Errorf("the unit sets %s, which breaks the agent's sandbox", line)
			}
		}
	}
}

func TestComposeFileRunsTheSandboxAsTheDockerfileSays(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Services map[string]struct {
			SecurityOpt []string `yaml:"security_opt"`
			Volumes     []string `yaml:"volumes"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
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
	if !slices.ContainsFunc(bot.Volumes, func(v string) bool { return strings.HasSuffix(v, ":/data") }) {
		t.Error("compose.yaml keeps no volume at /data (the data_dir)")
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
