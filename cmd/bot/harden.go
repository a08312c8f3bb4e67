package main

import (
	"log/slog"
	"os"
	"strings"

	"github.com/threadsmith/threadsmith/config"
	"golang.org/x/sys/unix"
)

// hardenProcess makes the bot's own process a poor target for what the agent
// runs: not dumpable (no /proc/<pid>/mem, environ or ptrace for a process of
// the same uid, should one ever see it), and no secret left in the
// environment that a child would inherit by default. Children get explicit
// environments anyway (git, the sandbox); this is the second lock.
func hardenProcess(cfg *config.Config, log *slog.Logger) {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		log.Warn("could not make the process non-dumpable", "err", err)
	}
	secret := map[string]bool{}
	for _, s := range secrets(cfg) {
		secret[s] = true
	}
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if secret[v] {
			_ = os.Unsetenv(k)
		}
	}
}
