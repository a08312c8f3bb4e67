package bridge

import (
	"encoding/json"
	"strings"
	"testing"

	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// A nested repository without a commit (`git init`, `cargo new`), made by
// the agent's own bash under a name it chose, does not fail the thread's
// commits: its files are pushed, and the thread gets one line saying so in
// which the name cannot break out of its code span.
func TestNestedRepositoryIsCommittedWithANote(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	name := "x`<!channel> @here\ny"
	script := `set -e
git init -q "$N"
printf 'fn main() {}\n' > "$N/main.rs"
git init -q crate && printf 'c\n' > crate/c.txt`
	args, _ := json.Marshal(map[string]string{"command": "N='" + name + "'\n" + script})
	r.llm.Push(
		llmfake.ToolCallReply(llmfake.Call{ID: "b1", Name: "bash", Args: string(args)}),
		llmfake.TextReply("made two crates"),
	)
	th := testThread("90.1")
	r.say(th, alice, "make two crates", true)
	r.waitText(th, "⬆️ pushed")
	rec, _ := r.thread(th)
	files := r.remote.Files(t, rec.Branch)
	if files["crate/c.txt"] == "" || files[name+"/main.rs"] == "" {
		t.Fatalf("the nested repositories' files are not on the remote branch: %v", files)
	}

	var note string
	for _, m := range r.chat.BotTexts(th) {
		if strings.Contains(m, "Nested git repositories") {
			note = m
		}
	}
	want := "ℹ️ Nested git repositories: `crate` committed as ordinary files (a repository without commits; its .git left out); " +
		"`x'<!channel> @here?y` committed as ordinary files (a repository without commits; its .git left out)."
	if note != want {
		t.Errorf("note = %q\nwant  %q", note, want)
	}

	// The next run's commit works as any other.
	r.llm.Push(writeThenAnswer("crate/d.txt", "d", "wrote d")...)
	r.say(th, alice, "write crate/d.txt", false)
	r.waitCount(th, "⬆️ pushed", 2)
	if got := r.remote.Files(t, rec.Branch)["crate/d.txt"]; strings.TrimSpace(got) != "d" {
		t.Errorf("crate/d.txt on the remote = %q, want d", got)
	}
}

// A folder whose .git is a file (pointing anywhere) is left out, and the
// thread is told.
func TestNestedRepositoryLeftOutIsSaid(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	args, _ := json.Marshal(map[string]string{"command": "git init -q elsewhere && echo e > elsewhere/e.txt && mkdir planted && printf 'gitdir: %s/elsewhere/.git\\n' \"$PWD\" > planted/.git && echo p > planted/p.txt"})
	r.llm.Push(
		llmfake.ToolCallReply(llmfake.Call{ID: "b1", Name: "bash", Args: string(args)}),
		llmfake.TextReply("planted"),
	)
	th := testThread("91.1")
	r.say(th, alice, "plant", true)
	r.waitText(th, "ℹ️ Nested git repositories: `elsewhere` committed as ordinary files (a repository without commits; its .git left out); `planted` not committed (its .git is a file or link to a repository elsewhere).")
	r.waitText(th, "⬆️ pushed")
	rec, _ := r.thread(th)
	if files := r.remote.Files(t, rec.Branch); files["planted/p.txt"] != "" || files["elsewhere/e.txt"] == "" {
		t.Errorf("remote files = %v, want elsewhere/e.txt and nothing of planted", files)
	}

	// The folder left out stays in the work tree: later runs neither say
	// so again nor push when they committed nothing.
	r.llm.Push(llmfake.TextReply("nothing to do"))
	r.say(th, alice, "anything?", false)
	r.waitRuns(th, 2)
	r.llm.Push(writeThenAnswer("d.txt", "d", "wrote d")...)
	r.say(th, alice, "write d.txt", false)
	r.waitText(th, "• `d.txt` +1 −0")
	r.flush()
	tr := r.chat.Transcript(th)
	if n := strings.Count(tr, "Nested git repositories"); n != 1 {
		t.Errorf("%d notes of nested repositories, want 1; the thread has:\n%s", n, tr)
	}
	if n := strings.Count(tr, "⬆️ pushed"); n != 2 {
		t.Errorf("%d push notices, want 2 (the first run's and the third's); the thread has:\n%s", n, tr)
	}
}
