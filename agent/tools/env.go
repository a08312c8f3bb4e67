package tools

import (
	"cmp"
	"maps"
	"os"
	"slices"
)

const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// bashEnv builds bash's environment from an allowlist, never by filtering the
// bot's own: the bot's process holds chat tokens and API keys, and a denylist
// forgets the next one. Only PATH, USER, LANG and LC_ALL are taken from the bot
// (none is a secret); everything else is fixed here or configured in cfg.Env.
//
// With a cache folder, the build and package tools keep their caches there
// (the operator's cfg.Env still wins), so a second build is warm.
func bashEnv(cfg WorkspaceConfig, home, tmp, gitconfig, cache string) []string {
	user := cmp.Or(os.Getenv("USER"), os.Getenv("LOGNAME"), "threadsmith")
	name := cmp.Or(cfg.GitName, "threadsmith")
	email := cmp.Or(cfg.GitEmail, "threadsmith@localhost")
	env := map[string]string{
		"PATH":    cmp.Or(os.Getenv("PATH"), defaultPath),
		"HOME":    home,
		"USER":    user,
		"LOGNAME": user,
		"LANG":    cmp.Or(os.Getenv("LANG"), "C.UTF-8"),
		"TERM":    "dumb",
		"TMPDIR":  tmp,
		// Commands must not stop for a pager or a colour terminal nobody watches.
		"PAGER":     "cat",
		"GIT_PAGER": "cat",
		"NO_COLOR":  "1",
		// Hermetic git: the workspace's own config, no system or user config of
		// the bot's machine, an explicit identity, and no credential prompt that
		// would hang until the timeout.
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_CONFIG_GLOBAL":   gitconfig,
		"GIT_TERMINAL_PROMPT": "0",
		"GIT_AUTHOR_NAME":     name,
		"GIT_AUTHOR_EMAIL":    email,
		"GIT_COMMITTER_NAME":  name,
		"GIT_COMMITTER_EMAIL": email,
	}
	if cache != "" {
		env["GOCACHE"] = cache + "/go-build"
		env["GOMODCACHE"] = cache + "/go-mod"
		// Go writes its module cache read-only; the agent must be able to
		// rm it to free its quota.
		env["GOFLAGS"] = "-modcacherw"
		env["npm_config_cache"] = cache + "/npm"
		env["PIP_CACHE_DIR"] = cache + "/pip"
		env["XDG_CACHE_HOME"] = cache + "/xdg"
	}
	if v := os.Getenv("LC_ALL"); v != "" {
		env["LC_ALL"] = v
	}
	maps.Copy(env, cfg.Env)
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}
