package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/threadsmith/threadsmith/config"
)

// consoleConfig is the config of `bot -console`. From the config file, when
// there is one, it takes what a local session needs — llm, agent, workspace,
// sandbox, log — and nothing of running a team's bot: Slack, Discord and
// http.* are off and their keys unchecked (an unset SLACK_BOT_TOKEN is
// no error here). Without a file it uses defaults with the LLM from the
// environment (OPENAI_API_KEY, and optionally OPENAI_BASE_URL and
// OPENAI_MODEL; the example file reads the same variables).
//
// Its data_dir is always a folder of the user's cache for the repository
// worked on, never the file's data_dir: a relative ./data would land inside
// the repository, and a team bot's data_dir belongs to that bot.
func consoleConfig(path, repoName string, env func(string) (string, bool)) (*config.Config, error) {
	cfg := config.Default()
	fromFile := true
	f, err := os.Open(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fromFile = false
		if v, ok := env("OPENAI_API_KEY"); ok {
			cfg.LLM.APIKey = v
		}
		if v, ok := env("OPENAI_BASE_URL"); ok && v != "" {
			cfg.LLM.BaseURL = v
		}
		if v, ok := env("OPENAI_MODEL"); ok && v != "" {
			cfg.LLM.Model = v
		}
	case err != nil:
		return nil, fmt.Errorf("cannot read %s: %w", path, err)
	default:
		cfg, err = config.Parse(f, env)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("invalid config %s:\n%w", path, err)
		}
	}
	cfg.Slack.Enabled = false
	cfg.Discord.Enabled = false
	cfg.HTTP = config.Default().HTTP // http.* is the team bot's: no probes, pages or webhooks here
	// Someone at a terminal who quits wants out: a run still going after
	// a few seconds is stopped and reported (the next start resumes).
	cfg.ShutdownGrace = min(cfg.ShutdownGrace, consoleGrace)
	// The console's data lives in the user's cache, beside everything else
	// on their disk: it keeps no reserve file there (the thread's own quota,
	// sandbox.disk, still holds).
	cfg.Sandbox.DiskReserve = 0
	var dataKey string
	if repoName == "" {
		repo, err := currentRepo()
		if err != nil {
			return nil, err
		}
		if _, taken := cfg.Workspace.Repo(repo.Name); taken {
			repo.Name += "-here" // the file configures another repository of that name
		}
		cfg.Workspace.Repos = append(cfg.Workspace.Repos, repo)
		cfg.Workspace.DefaultRepo = repo.Name
		dataKey = repo.URL
	} else {
		repo, ok := cfg.Workspace.Repo(repoName)
		if !ok {
			return nil, fmt.Errorf("-repo %s: unknown repository; known: %s", repoName, strings.Join(cfg.Workspace.RepoNames(), ", "))
		}
		cfg.Workspace.DefaultRepo = repoName
		dataKey = repo.URL
	}
	cfg.DataDir = consoleDataDir(cfg.Workspace.DefaultRepo, dataKey)
	if err := cfg.Validate(); err != nil {
		if !fromFile {
			return nil, fmt.Errorf("no config file at %s, and the defaults are not enough:\n%w\n(set OPENAI_API_KEY, or copy config.example.yaml to %s)", path, err, path)
		}
		return nil, fmt.Errorf("invalid config %s (for -console):\n%w", path, err)
	}
	return &cfg, nil
}

// consoleGrace bounds the console's shutdown.
const consoleGrace = 5 * time.Second

// consoleDataDir is the console's data folder for a repository: in the
// user's cache, named after the repository and a hash of where it is.
func consoleDataDir(name, key string) string {
	sum := sha256.Sum256([]byte(key))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "threadsmith", name+"-"+hex.EncodeToString(sum[:4]))
}

// currentRepo describes the git repository of the current directory.
func currentRepo() (config.Repo, error) {
	top, err := gitOut("rev-parse", "--show-toplevel")
	if err != nil {
		return config.Repo{}, errors.New("-console works on the git repository of the current directory, and this is not one (or pass -repo with a configured repository)")
	}
	branch, err := gitOut("symbolic-ref", "--short", "HEAD")
	if err != nil {
		branch = "main"
	}
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, filepath.Base(top))
	if name == "" || name[0] == '.' || name[0] == '-' {
		name = "repo" + name
	}
	return config.Repo{Name: name, URL: top, DefaultBranch: branch}, nil
}

func gitOut(args ...string) (string, error) {
	out, err := exec.Command("git", args...).Output()
	return strings.TrimSpace(string(out)), err
}
