package tools

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWriteGolden(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	writeTree(t, tw.root, map[string]string{"old.txt": "old\n", "dir/keep": ""})
	wr := NewWriteTool(tw.Workspace, tw.files)
	cases := []goldenCase{
		{"new file in new folders", call(t, wr, map[string]any{"path": "a/b/c.txt", "content": "hello\n"})},
		{"overwrite", call(t, wr, map[string]any{"path": "old.txt", "content": "new content\n"})},
		{"onto a folder", call(t, wr, map[string]any{"path": "dir", "content": "x"})},
		{"the root", call(t, wr, map[string]any{"path": ".", "content": "x"})},
	}
	checkGolden(t, "write", tw, cases)
	for p, want := range map[string]string{"a/b/c.txt": "hello\n", "old.txt": "new content\n"} {
		if got, _ := os.ReadFile(filepath.Join(tw.root, p)); string(got) != want {
			t.Errorf("%s holds %q, want %q", p, got, want)
		}
	}
}

func TestEditGolden(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	writeTree(t, tw.root, map[string]string{
		"main.go": "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello\")\n\tfmt.Println(\"hello\")\n}\n\nfunc other() {\n\treturn\n}\n",
		"doc.md":  "Title\n\nIt\u2019s a \u201cquoted\u201d line \u2014 with a dash.   \nKeep \u201cthese\u201d as they are.\n",
		"unread":  "x\n",
	})
	rd := NewReadTool(tw.Workspace, tw.files)
	ed := NewEditTool(tw.Workspace, tw.files)
	call(t, rd, map[string]any{"path": "main.go"})
	call(t, rd, map[string]any{"path": "doc.md"})
	cases := []goldenCase{
		{"exact", call(t, ed, map[string]any{"path": "main.go", "oldText": "func other() {\n\treturn\n}", "newText": "func other() int {\n\treturn 1\n}"})},
		{"not unique", call(t, ed, map[string]any{"path": "main.go", "oldText": "fmt.Println(\"hello\")", "newText": "x"})},
		{"not found", call(t, ed, map[string]any{"path": "main.go", "oldText": "func missing()", "newText": "x"})},
		{"fuzzy quotes, dash and trailing spaces", call(t, ed, map[string]any{"path": "doc.md", "oldText": "It's a \"quoted\" line - with a dash.\n", "newText": "It is a plain line.\n"})},
		{"multi edit", call(t, ed, map[string]any{"path": "main.go", "edits": []map[string]string{
			{"oldText": "package main", "newText": "package app"},
			{"oldText": "func main() {", "newText": "func Main() {"},
		}})},
		{"overlapping edits", call(t, ed, map[string]any{"path": "main.go", "edits": []map[string]string{
			{"oldText": "package app\n\nimport", "newText": "a"},
			{"oldText": "import \"fmt\"", "newText": "b"},
		}})},
		{"no change", call(t, ed, map[string]any{"path": "main.go", "oldText": "package app", "newText": "package app"})},
		{"unread file", call(t, ed, map[string]any{"path": "unread", "oldText": "x", "newText": "y"})},
		{"missing file", call(t, ed, map[string]any{"path": "nope.go", "oldText": "x", "newText": "y"})},
		{"both shapes", call(t, ed, map[string]any{"path": "main.go", "oldText": "x", "newText": "y", "edits": []map[string]string{{"oldText": "a", "newText": "b"}}})},
		{"oldText without newText", call(t, ed, map[string]any{"path": "main.go", "oldText": "x"})},
	}
	checkGolden(t, "edit", tw, cases)
	got, _ := os.ReadFile(filepath.Join(tw.root, "doc.md"))
	if want := "Title\n\nIt is a plain line.\nKeep \u201cthese\u201d as they are.\n"; string(got) != want {
		t.Errorf("doc.md holds %q, want %q: only the matched span may change", got, want)
	}
}

func TestEditRefusesFileChangedSinceRead(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	writeTree(t, tw.root, map[string]string{"f.txt": "one\ntwo\n"})
	rd := NewReadTool(tw.Workspace, tw.files)
	ed := NewEditTool(tw.Workspace, tw.files)
	call(t, rd, map[string]any{"path": "f.txt"})
	// Same size, different content: only the hash can tell.
	if err := os.WriteFile(filepath.Join(tw.root, "f.txt"), []byte("one\ntwO\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := call(t, ed, map[string]any{"path": "f.txt", "oldText": "one", "newText": "1"})
	if !res.IsError || !strings.Contains(textOf(res), "changed since you last read it") {
		t.Fatalf("got %q, want a changed-since-read error", textOf(res))
	}
	call(t, rd, map[string]any{"path": "f.txt"})
	if res := call(t, ed, map[string]any{"path": "f.txt", "oldText": "one", "newText": "1"}); res.IsError {
		t.Fatalf("after reading again: %q", textOf(res))
	}
	// Its own edits and writes count as read.
	if res := call(t, ed, map[string]any{"path": "f.txt", "oldText": "1", "newText": "uno"}); res.IsError {
		t.Fatalf("second edit: %q", textOf(res))
	}
	wr := NewWriteTool(tw.Workspace, tw.files)
	call(t, wr, map[string]any{"path": "g.txt", "content": "fresh\n"})
	if res := call(t, ed, map[string]any{"path": "g.txt", "oldText": "fresh", "newText": "edited"}); res.IsError {
		t.Fatalf("edit after write: %q", textOf(res))
	}
	// A touch that changes nothing is not a change.
	later := time.Now().Add(time.Hour)
	os.Chtimes(filepath.Join(tw.root, "g.txt"), later, later)
	if res := call(t, ed, map[string]any{"path": "g.txt", "oldText": "edited", "newText": "again"}); res.IsError {
		t.Fatalf("edit after touch: %q", textOf(res))
	}
}

func TestEditKeepsBOMAndLineEndings(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	orig := "\xef\xbb\xbfalpha\r\nbeta\r\ngamma\r\nmixed\nend\r\n"
	writeTree(t, tw.root, map[string]string{"w.txt": orig})
	rd := NewReadTool(tw.Workspace, tw.files)
	ed := NewEditTool(tw.Workspace, tw.files)
	call(t, rd, map[string]any{"path": "w.txt"})
	res := call(t, ed, map[string]any{"path": "w.txt", "oldText": "alpha\nbeta\n", "newText": "ALPHA\nBETA\nNEW\n"})
	if res.IsError {
		t.Fatalf("got error %q", textOf(res))
	}
	got, _ := os.ReadFile(filepath.Join(tw.root, "w.txt"))
	if want := "\xef\xbb\xbfALPHA\r\nBETA\r\nNEW\r\ngamma\r\nmixed\nend\r\n"; string(got) != want {
		t.Errorf("got %q, want %q (BOM, CRLF and the lone LF elsewhere kept)", got, want)
	}
	if !strings.Contains(textOf(res), "first changed line 1") {
		t.Errorf("got %q, want first changed line 1 (the BOM is not a line)", textOf(res))
	}
}

func TestLocateMapsFuzzyMatchBack(t *testing.T) {
	tests := []struct {
		content, old string
		want         string // the original text the span covers
		kind         matchKind
		count        int
	}{
		{"a\nb\nc", "b", "b", matchExact, 1},
		{"x\r\ny\r\nz", "x\ny", "x\r\ny", matchExact, 1},
		{"say \u201chi\u201d now", "say \"hi\"", "say \u201chi\u201d", matchFuzzy, 1},
		{"f(a)   \n  g(b)\t\nh", "f(a)\n  g(b)\n", "f(a)   \n  g(b)\t\n", matchFuzzy, 1},
		{"ﬁle one", "file", "ﬁle", matchFuzzy, 1},               // NFKC ligature maps back to the ligature
		{"a\u00a0b and a b", "a b", "a b", matchExact, 1},       // exact wins over the fuzzy copy
		{"x\u2014y x-y x\u2013y", "x-y", "x-y", matchExact, 1},  // exact once
		{"x\u2014y x\u2013y", "x-y", "x\u2014y", matchFuzzy, 2}, // fuzzily twice
		{"abc", "zzz", "", matchNone, 0},
	}
	for _, tt := range tests {
		sp, n, kind := locate([]byte(tt.content), []byte(tt.old))
		got := ""
		if kind != matchNone {
			got = tt.content[sp.start:sp.end]
		}
		if got != tt.want || kind != tt.kind || n != tt.count {
			t.Errorf("locate(%q, %q) = %q kind %d count %d, want %q kind %d count %d", tt.content, tt.old, got, kind, n, tt.want, tt.kind, tt.count)
		}
	}
}
