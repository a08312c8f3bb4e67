package agent_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/internal/safefile"
)

// refusals lists the sentences of the refusals among LoadResources' errors.
func refusals(err error) []string {
	var out []string
	var walk func(error)
	walk = func(err error) {
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		if e, ok := safefile.Refused(err); ok {
			out = append(out, e.Error())
		}
	}
	walk(err)
	slices.Sort(out)
	return out
}

// The workspace's skills and templates are the agent's to write: a link, a
// pipe, a device or a huge file among them is left out and told, and nothing
// of what it leads to is loaded; the operator's folders still follow links
// but do not wait on a pipe.
func TestLoadResourcesRefusesWhatTheAgentPlanted(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	secret := filepath.Join(dir, "config.yaml")
	writeFile(t, secret, "api_key: sk-never-loaded")
	writeFile(t, filepath.Join(ws, ".threadsmith/prompts/good.md"), "good template")
	writeFile(t, filepath.Join(ws, ".agents/skills/good/SKILL.md"), "good skill")
	writeFile(t, filepath.Join(dir, "outside/SKILL.md"), "sk-never-loaded")
	if err := os.MkdirAll(filepath.Join(ws, ".threadsmith/skills"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		".threadsmith/prompts/key.md":  secret,
		".threadsmith/prompts/env.md":  "/proc/self/environ",
		".threadsmith/prompts/z.md":    "/dev/zero",
		".threadsmith/prompts/in.md":   "good.md",
		".threadsmith/skills/x":        filepath.Join(dir, "outside"),
		".agents/skills/y.md":          secret,
		".threadsmith/skills/linkdir2": "../../.agents/skills/good",
	} {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(ws, ".threadsmith/prompts/fifo.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(filepath.Join(ws, ".threadsmith/prompts/big.md"))
	if err != nil {
		t.Fatal(err)
	}
	big.Truncate(50 << 20)
	big.Close()
	operator := filepath.Join(dir, "operator")
	writeFile(t, filepath.Join(dir, "shared/lint/SKILL.md"), "operator skill")
	if err := os.MkdirAll(operator, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(dir, "shared/lint"), filepath.Join(operator, "lint"))
	syscall.Mkfifo(filepath.Join(operator, "pipe.md"), 0o644)

	res, err := agent.LoadResources(ws, []string{operator}, nil)
	var names []string
	for _, s := range res.Skills {
		names = append(names, s.Name)
		if strings.Contains(s.Body, "sk-never") {
			t.Errorf("skill %s holds the link's target", s.Name)
		}
	}
	for _, tm := range res.Templates {
		names = append(names, "/"+tm.Name)
	}
	slices.Sort(names)
	if want := []string{"/good", "good", "lint"}; !slices.Equal(names, want) {
		t.Errorf("loaded %v, want %v", names, want)
	}
	want := []string{
		".agents/skills/y.md was not read: it is a symbolic link; the bot reads only regular files of the worktree",
		".threadsmith/prompts/big.md was not read: it is larger than 64 KB, the most the bot reads of it",
		".threadsmith/prompts/env.md was not read: it is a symbolic link; the bot reads only regular files of the worktree",
		".threadsmith/prompts/fifo.md was not read: it is a named pipe; the bot reads only regular files of the worktree",
		".threadsmith/prompts/in.md was not read: it is a symbolic link; the bot reads only regular files of the worktree",
		".threadsmith/prompts/key.md was not read: it is a symbolic link; the bot reads only regular files of the worktree",
		".threadsmith/prompts/z.md was not read: it is a symbolic link; the bot reads only regular files of the worktree",
		".threadsmith/skills/linkdir2/SKILL.md was not read: .threadsmith/skills/linkdir2 is a symbolic link; the bot follows no link in the worktree",
		".threadsmith/skills/x/SKILL.md was not read: .threadsmith/skills/x is a symbolic link; the bot follows no link in the worktree",
		filepath.Join(operator, "pipe.md") + " was not read: it is a named pipe; the bot reads only regular files of " + operator,
	}
	slices.Sort(want)
	if got := refusals(err); !slices.Equal(got, want) {
		t.Errorf("refusals:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Contains(err.Error(), "sk-never") {
		t.Errorf("the error holds a target's content: %v", err)
	}
	var pe *safefile.Error
	if !errors.As(err, &pe) {
		t.Error("refusals are not *safefile.Error")
	}
}
