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

	"github.com/threadsmith/threadsmith/config"
)

// consoleConfig is the config of `bot -console`: the config file when there is
// one, else defaults with the LLM from the environment (OPENAI_API_KEY, and
// optionally OPENAI_BASE_URL and OPENAI_MODEL); Slack and Discord off; the
// repository of the current directory unless repoName picks a configured one.
func consoleConfig(path, repoName string, env func(string) (string, bool)) (*config.Config, error) {
	var cfg config.Config
	fromFile := true
	_, statErr := os.Stat(path)
	c, err := config.Load(path, env)
	switch {
	case errors.Is(statErr, fs.ErrNotExist):
		fromFile = false
		cfg = config.Default()
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
		return nil, fmt.Errorf("invalid config %s:\n%w", path, err)
	default:
		cfg = c
	}
	cfg.Slack.Enabled = false
	cfg.Discord.Enabled = false
	if repoName == "" {
		repo, dataDir, err := currentRepo()
		if err != nil {
			return nil, err
		}
		cfg.Workspace.Repos = append(cfg.Workspace.Repos, repo)
		cfg.Workspace.DefaultRepo = repo.Name
		if !fromFile {
			cfg.DataDir = dataDir
		}
	} else {
		if _, ok := cfg.Workspace.Repo(repoName); !ok {
			return nil, fmt.Errorf("-repo %s: unknown repository; known: %s", repoName, strings.Join(cfg.Workspace.RepoNames(), ", "))
		}
		cfg.Workspace.DefaultRepo = repoName
	}
	if err := cfg.Validate(); err != nil {
		if !fromFile {
			return nil, fmt.Errorf("no config file at %s, and the defaults are not enough:\n%w\n(set OPENAI_API_KEY, or copy config.example.yaml to %s)", path, err, path)
		}
		return nil, err
	}
	return &cfg, nil
}

// currentRepo describes the git repository of the current directory, and a data
// folder for it outside the repository.
func currentRepo() (config.Repo, string, error) {
	top, err := gitOut("rev-parse", "--show-toplevel")
	if err != nil {
		return config.Repo{}, "", errors.New("-console works on the git repository of the current directory, and this is not one (or pass -repo with a configured repository)")
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
	sum := sha256.Sum256([]byte(top))
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	data := filepath.Join(base, "threadsmith", name+"-"+hex.EncodeToString(sum[:4]))
	return config.Repo{Name: name, URL: top, DefaultBranch: branch}, data, nil
}

func gitOut(args ...string) (string, error) {
	out, err := exec.Command("git", args...).Output()
	return strings.TrimSpace(string(out)), err
}
