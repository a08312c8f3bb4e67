package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/storage"
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
	cfg.Budget = config.Budget{}     // budget.* is the team bot's too: one person at their terminal is not capped
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

// currentRepo describes the git repository of the current directory. It
// refuses, saying what to do, a repository git will not work on for this
// user (another user owns it) and one without a commit to start from.
func currentRepo() (config.Repo, error) {
	top, err := gitOut("rev-parse", "--show-toplevel")
	if err != nil {
		if msg := gitStderr(err); strings.Contains(msg, "dubious ownership") {
			return config.Repo{}, dubiousOwnership(msg, "")
		}
		return config.Repo{}, errors.New("-console works on the git repository of the current directory, and this is not one (or pass -repo with a configured repository)")
	}
	// git accepts it (the user's safe.directory may list it), but the
	// bot's own git reads no global config: it would refuse it later.
	if owner, ok := otherOwner(top); ok {
		return config.Repo{}, dubiousOwnership("", owner)
	}
	if _, err := gitOut("rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err != nil {
		return config.Repo{}, fmt.Errorf("the repository at %s has no commit yet, and a session starts from the last one: make a first commit (git add -A && git commit -m init), then start -console again", top)
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

// dubiousOwnership is the console's refusal of a repository another user
// owns: what git says (gitMsg, when it said it) and how to fix it. It
// changes no git config: trusting another user's repository is the
// user's call.
func dubiousOwnership(gitMsg, owner string) error {
	said := `git says "detected dubious ownership"`
	if line, _, _ := strings.Cut(gitMsg, "\n"); line != "" {
		said = "git says: " + strings.TrimPrefix(line, "fatal: ")
	}
	if owner != "" {
		said += " (it belongs to " + owner + ")"
	}
	return fmt.Errorf("-console cannot work on this repository: %s. It belongs to another user than the one running the bot: run -console as its owner, or make the repository yours (chown -R). A safe.directory entry in your git config does not help: the bot's git reads no global config", said)
}

// otherOwner reports the owner of dir (or of its .git) when it is not this
// process's user, as git's ownership check sees it.
func otherOwner(dir string) (string, bool) {
	for _, p := range []string{dir, filepath.Join(dir, ".git")} {
		st, err := os.Stat(p)
		if err != nil {
			continue
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Geteuid() {
			name := "uid " + strconv.Itoa(int(sys.Uid))
			if u, err := user.LookupId(strconv.Itoa(int(sys.Uid))); err == nil {
				name = u.Username + " (" + name + ")"
			}
			return name, true
		}
	}
	return "", false
}

// uncommittedNote says, for a console on the current directory's
// repository, that changes not committed there are not in the session:
// it works on a clone of the last commit. Carrying them over would commit
// someone's unfinished work onto the bot's branch without being asked.
func uncommittedNote(dir string) string {
	status, err := exec.Command("git", "-C", dir, "status", "--porcelain", "--untracked-files=all").Output()
	if err != nil {
		return ""
	}
	n := 0
	for _, l := range strings.Split(string(status), "\n") {
		if strings.TrimSpace(l) != "" {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	head, _ := gitOutIn(dir, "rev-parse", "--short", "HEAD")
	files := "files"
	if n == 1 {
		files = "file"
	}
	return fmt.Sprintf("\nyou have uncommitted changes in %d %s: I work on the last commit `%s`, without them (commit them first for me to see them)", n, files, head)
}

// consoleNote is what the console says at start about the repository it
// works on (nothing for a configured repository, -repo).
func (m *Main) consoleNote(cfg *config.Config) string {
	if m.ConsoleRepo != "" {
		return ""
	}
	r, ok := cfg.Workspace.Repo(cfg.Workspace.DefaultRepo)
	if !ok {
		return ""
	}
	return uncommittedNote(r.URL)
}

// consoleIdlePoll is how often the end of piped input looks at the
// thread's record to see whether everything it asked for is done.
const consoleIdlePoll = 100 * time.Millisecond

// consoleIdle returns once thread has nothing left to do: no input waiting
// or queued, every run ended (a run stays open in storage until its work is
// pushed), the same on two looks in a row. A thread never created (nothing
// was sent) is idle.
func (m *Main) consoleIdle(ctx context.Context, thread chat.ThreadRef) error {
	key := storage.ThreadKey{Platform: thread.Platform, Team: thread.Team, Channel: thread.Channel, Thread: thread.Thread}
	tick := time.NewTicker(consoleIdlePoll)
	defer tick.Stop()
	last := -1 // the number of runs when the last look found it idle
	for {
		rec, err := m.DB.GetThread(ctx, key)
		switch {
		case errors.Is(err, storage.ErrNotFound):
			return nil
		case err != nil:
			return err
		}
		idle, runs, err := m.threadIdle(ctx, rec.ID)
		if err != nil {
			return err
		}
		if idle && runs == last {
			return nil
		}
		last = -1
		if idle {
			last = runs
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// threadIdle says whether thread id has no input pending (received or
// queued) and no run going, and how many runs it had.
func (m *Main) threadIdle(ctx context.Context, id int64) (bool, int, error) {
	pending, err := m.DB.PendingInbound(ctx, id)
	if err != nil {
		return false, 0, err
	}
	runs, err := m.DB.ThreadRuns(ctx, id)
	if err != nil {
		return false, 0, err
	}
	for _, r := range runs {
		if r.EndedAt.IsZero() {
			return false, len(runs), nil
		}
	}
	return len(pending) == 0, len(runs), nil
}

func gitOut(args ...string) (string, error) {
	out, err := exec.Command("git", args...).Output()
	return strings.TrimSpace(string(out)), err
}

func gitOutIn(dir string, args ...string) (string, error) {
	return gitOut(append([]string{"-C", dir}, args...)...)
}

// gitStderr is what a failed git command wrote to stderr.
func gitStderr(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}
