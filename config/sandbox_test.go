package config

import (
	"strings"
	"testing"
)

func TestParseSandbox(t *testing.T) {
	c := mustParse(t, `
sandbox:
  mode: None
  network: true
  memory: 512MiB
  processes: 64
  read_only_paths: [/opt/tools]
  disk: 10GiB
  files: 50000
  disk_reserve: 2GiB
  caches: false
`, nil)
	want := Sandbox{Mode: SandboxNone, Network: true, Memory: 512 << 20, Processes: 64, ReadOnlyPaths: []string{"/opt/tools"}}
	if c.Sandbox.Mode != want.Mode || c.Sandbox.Network != want.Network || c.Sandbox.Memory != want.Memory ||
		c.Sandbox.Processes != want.Processes || len(c.Sandbox.ReadOnlyPaths) != 1 ||
		c.Sandbox.Disk != 10<<30 || c.Sandbox.Files != 50000 || c.Sandbox.DiskReserve != 2<<30 || c.Sandbox.Caches {
		t.Errorf("got %+v, want %+v", c.Sandbox, want)
	}
	if d := Default().Sandbox; d.Mode != SandboxAuto || d.Network || d.Memory != 2<<30 || d.Processes != 512 ||
		d.Disk != 5<<30 || d.Files != 200_000 || d.DiskReserve != 256<<20 || !d.Caches {
		t.Errorf("defaults: %+v, want auto, network off, 2GiB, 512, disk 5GiB, 200000 files, reserve 256MiB, caches on", d)
	}
}

func TestByteSizes(t *testing.T) {
	for in, want := range map[string]ByteSize{
		"2GiB": 2 << 30, "2G": 2 << 30, "512MiB": 512 << 20, "1.5G": 3 << 29,
		"1048576": 1 << 20, "64k": 64 << 10, "1 TiB": 1 << 40, "100b": 100,
	} {
		var got ByteSize
		if err := got.UnmarshalText([]byte(in)); err != nil || got != want {
			t.Errorf("%q: got %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "lots", "-1G", "2XB", "1e30G"} {
		var got ByteSize
		if err := got.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("%q: got %d, want an error", in, got)
		}
	}
	if s := ByteSize(2 << 30).String(); s != "2GiB" {
		t.Errorf("String = %q, want 2GiB", s)
	}
}

func TestValidateSandbox(t *testing.T) {
	for _, tc := range []struct {
		mutate func(*Config)
		key    string
		want   string
	}{
		{func(c *Config) { c.Sandbox.Mode = "chroot" }, "sandbox.mode", "auto, namespaces or none"},
		{func(c *Config) { c.Sandbox.Memory = 1 << 20 }, "sandbox.memory", "at least 16MiB"},
		{func(c *Config) { c.Sandbox.Processes = 0 }, "sandbox.processes", "greater than 0"},
		{func(c *Config) { c.Sandbox.ReadOnlyPaths = []string{"opt"} }, "sandbox.read_only_paths[0]", "absolute"},
		{func(c *Config) { c.Sandbox.Disk = 0 }, "sandbox.disk", "at least 1MiB"},
		{func(c *Config) { c.Sandbox.Files = 10 }, "sandbox.files", "at least 100"},
	} {
		c := validConfig()
		tc.mutate(&c)
		wantErr(t, c.Validate(), tc.key, tc.want)
	}
	_, err := Parse(strings.NewReader("sandbox: {memory: lots}"), nil)
	wantErr(t, err, "sandbox.memory", "a size such as 2GiB")
	_, err = Parse(strings.NewReader("sandbox: {disk_reserve: plenty}"), nil)
	wantErr(t, err, "sandbox.disk_reserve", "a size such as 2GiB")
}

func TestRepoForgeKeys(t *testing.T) {
	c := mustParse(t, `
workspace:
  default_repo: a
  repos:
    - {name: a, url: https://ghe.example/x/a.git, forge: github, api_url: https://ghe.example/api/v3, pull_requests: ready}
    - {name: b, url: /srv/b}
`, nil)
	if r := c.Workspace.Repos[0]; r.Forge != "github" || r.APIURL != "https://ghe.example/api/v3" || r.PullRequests != PullRequestsReady {
		t.Errorf("repo a = %+v", r)
	}
	if r := c.Workspace.Repos[1]; r.PullRequests != PullRequestsDraft {
		t.Errorf("repo b pull_requests = %q, want the default draft", r.PullRequests)
	}
	v := validConfig()
	v.Workspace.Repos[0].PullRequests = "sometimes"
	v.Workspace.Repos[0].Forge = "sourceforge"
	v.Workspace.Repos[0].APIURL = "ftp://x"
	err := v.Validate()
	wantErr(t, err, "workspace.repos[0].pull_requests", "draft, ready or off")
	wantErr(t, err, "workspace.repos[0].forge", "github, gitlab")
	wantErr(t, err, "workspace.repos[0].api_url", "http(s)")
	// A webhook secret without http.listen would receive nothing.
	v = validConfig()
	v.Workspace.Repos[0].WebhookSecret = "s"
	wantErr(t, v.Validate(), "workspace.repos[0].webhook_secret", "needs http.listen")
	v.HTTP.Listen = "127.0.0.1:9090"
	if err := v.Validate(); err != nil {
		t.Errorf("with http.listen: %v", err)
	}
}
