package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/threadsmith/threadsmith/ops"
)

// version overrides the version read from the build information, for builds
// that have none worth showing (a Docker build without .git):
//
//	go build -ldflags "-X main.version=v1.4.0" -o threadsmith ./cmd/bot
var version string

// buildInfo is what the binary knows of its build: the module version that
// go install stamps (v1.4.0, or a pseudo-version for a commit), else "devel";
// the VCS revision go build records from a git checkout (with "-dirty" when
// the tree had changes).
func buildInfo() ops.BuildInfo {
	info := ops.BuildInfo{Version: "devel", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" {
			info.Version = v
		}
		var rev string
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if rev != "" && dirty {
			rev += "-dirty"
		}
		info.Revision = rev
	}
	if version != "" {
		info.Version = version
	}
	return info
}

// versionLine is what -version prints.
func versionLine() string {
	bi := buildInfo()
	s := "threadsmith " + bi.Version
	if bi.Revision != "" {
		s += " (" + bi.Revision + ")"
	}
	return fmt.Sprintf("%s %s %s/%s", s, bi.GoVersion, runtime.GOOS, runtime.GOARCH)
}
