package bridge

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/threadsmith/threadsmith/workspace"
)

// The pull request's description carries commit subjects (the model writes
// them) and the requester's display name (the person's choice): neither can
// mention a user or a team on the forge.
func TestPullRequestDescriptionMentionsNobody(t *testing.T) {
	t.Parallel()
	body := prDescription("Slack", "https://chat.example/t/1", "@admin", []string{"Fix the build, cc @acme/security @bob", "Add docs"}, nil)
	if m := regexp.MustCompile(`@[A-Za-z0-9]`).FindAllString(body, -1); len(m) > 0 {
		t.Errorf("the description mentions %q:\n%s", m, body)
	}
	for _, want := range []string{"https://chat.example/t/1", "Fix the build", "acme/security", "- Add docs", "admin"} {
		if !strings.Contains(body, want) {
			t.Errorf("the description lacks %q:\n%s", want, body)
		}
	}
}

// A request's first line becomes a title of at most 72 bytes, cut between
// characters.
func TestFirstLineCutsBetweenCharacters(t *testing.T) {
	t.Parallel()
	got := firstLine(strings.Repeat("a", 71) + "ééé\nmore")
	if !utf8.ValidString(got) || len(got) > 72 || !strings.HasPrefix(got, strings.Repeat("a", 71)) {
		t.Errorf("firstLine = %q (%d bytes)", got, len(got))
	}
}

// Why a thread gets no pull request is said once, though a push and !pr's
// work may both come to say it: both reach the owner, which says it once.
func TestNoPullRequestNoteIsSaidOnceAcrossGoroutines(t *testing.T) {
	t.Parallel()
	th := &thread{}
	said := 0
	for range 2 {
		if th.prNoteOnce("pull requests are off") != "" {
			said++
		}
	}
	if said != 1 {
		t.Fatalf("the note was said %d times, want once", said)
	}
}

// A branch with thousands of commits still gets a description the forge
// takes: GitHub refuses one over 65,536 characters.
func TestPullRequestDescriptionFitsTheForge(t *testing.T) {
	t.Parallel()
	subjects := make([]string, 5000)
	for i := range subjects {
		subjects[i] = fmt.Sprintf("commit %d: %s", i, strings.Repeat("é", 200))
	}
	files := make([]workspace.FileStat, 3000)
	for i := range files {
		files[i] = workspace.FileStat{Path: fmt.Sprintf("dir/%s/file%d.go", strings.Repeat("d", 400), i), Added: 1}
	}
	body := prDescription("Slack", "https://example.slack.com/archives/C1/p1", strings.Repeat("n", 1000), subjects, files)
	if n := utf8.RuneCountInString(body); n > 65536 || len(body) > maxPRBody {
		t.Fatalf("description has %d characters, %d bytes; GitHub takes 65,536 characters", n, len(body))
	}
	if !strings.Contains(body, "more commits") || !strings.Contains(body, "- commit 0: ") || !strings.HasSuffix(body, "to change it.\n") ||
		!strings.Contains(body, "## Files changed (3000, +3000 −0)") || !strings.Contains(body, "and 2900 more files") {
		t.Errorf("description does not list the first commits, say how many more there are, and end with its note:\n%.300s…%s", body, body[len(body)-300:])
	}
}

// The description lists the files the branch changed, with their line
// counts; a file name (the model's choice) stays one code span on one line
// and cannot start a heading, a mention or a link of its own.
func TestPullRequestDescriptionListsTheFilesChanged(t *testing.T) {
	t.Parallel()
	body := prDescription("Discord", "https://discord.com/channels/1/2", "ann", []string{"add a parser"}, []workspace.FileStat{
		{Path: "parser.go", Added: 120, Deleted: 4},
		{Path: "new.go", OldPath: "old.go", Added: 2, Deleted: 2},
		{Path: "logo.png", Binary: true},
		{Path: "evil`\n# Heading @bob [x](https://evil.example).md", Added: 1},
	})
	for _, want := range []string{
		"## Files changed (4, +123 −6)",
		"- `parser.go` (+120 −4)\n",
		"- `old.go` → `new.go` (+2 −2)\n",
		"- `logo.png` (binary)\n",
		"- `evil'?# Heading @bob [x](https://evil.example).md` (+1 −0)\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the description lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "\n# Heading") {
		t.Errorf("a file name started a line of its own:\n%s", body)
	}
	if strings.Index(body, "## What was asked") > strings.Index(body, "## Files changed") {
		t.Errorf("the files come before what was asked:\n%s", body)
	}
	if got := prDescription("Slack", "l", "", []string{"x"}, nil); strings.Contains(got, "Files changed") {
		t.Errorf("a description without files has a files section:\n%s", got)
	}
}
