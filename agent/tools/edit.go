package tools

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"hash/crc64"
	"slices"
	"strings"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/tools/truncate"
)

// EditName is the edit tool's name.
const EditName = "edit"

// MaxEditBytes is the largest file edit changes; bigger ones are for bash.
const MaxEditBytes = 8 << 20

//go:embed edit.md
var editDescription string

type editParams struct {
	Path    string     `json:"path" required:"true" desc:"File to edit, relative to the workspace root"`
	OldText *string    `json:"oldText" desc:"Text to replace: must occur exactly once in the file, whitespace included"`
	NewText *string    `json:"newText" desc:"Text to put in its place (empty to delete)"`
	Edits   []editPair `json:"edits" desc:"Several replacements in one call, instead of oldText/newText; all are matched against the file as it was and must not overlap"`
}

type editPair struct {
	OldText string `json:"oldText" required:"true" desc:"Text to replace: must occur exactly once in the file"`
	NewText string `json:"newText" required:"true" desc:"Text to put in its place"`
}

// EditDetails are the machine-readable facts of an edit result.
type EditDetails struct {
	Diff             string `json:"diff"`
	FirstChangedLine int    `json:"firstChangedLine,omitempty"`
	Replacements     int    `json:"replacements"`
	Fuzzy            bool   `json:"fuzzy,omitempty"`
}

// EditTool replaces unique spans of text in files the session has read.
type EditTool struct {
	ws    *Workspace
	files *ReadTracker
	spec  llm.ToolSpec
}

// NewEditTool returns the edit tool of ws; it edits only files recorded in files.
func NewEditTool(ws *Workspace, files *ReadTracker) *EditTool {
	return &EditTool{ws: ws, files: files, spec: newSpec(EditName, editDescription, ws, editParams{})}
}

func (t *EditTool) Spec() llm.ToolSpec { return t.spec }

func (t *EditTool) Execute(ctx context.Context, call agent.ToolCall, _ func(agent.ToolResult)) (agent.ToolResult, error) {
	var p editParams
	if err := decodeArgs(EditName, call.Args, &p); err != nil {
		return errorResult(err), nil
	}
	pairs, msg := p.pairs()
	if msg != "" {
		return agent.ErrorResult(msg), nil
	}
	if err := ctx.Err(); err != nil {
		return agent.ErrorResult("edit aborted"), nil
	}
	tg, err := t.ws.resolve(p.Path)
	if err != nil {
		return errorResult(err), nil
	}
	f, fi, err := openRegular(tg, p.Path)
	if err != nil {
		return errorResult(err), nil
	}
	if fi.Size() > MaxEditBytes {
		f.Close()
		return agent.ErrorResult(fmt.Sprintf("%s is %s; edit changes files up to %s. Use bash (sed, a script) for this one.",
			p.Path, truncate.FormatSize(fi.Size()), truncate.FormatSize(MaxEditBytes))), nil
	}
	content, err := readAllCtx(ctx, f, fi.Size())
	f.Close()
	if err != nil {
		return agent.ErrorResult("cannot read " + quoted(p.Path) + ": " + describeFSError(err)), nil
	}
	if msg := t.checkRead(tg, p.Path, content, fi.ModTime()); msg != "" {
		return agent.ErrorResult(msg), nil
	}

	updated, fuzzy, msg := applyEdits(content, pairs, p.Path)
	if msg != "" {
		return agent.ErrorResult(msg), nil
	}
	grow, refused := t.ws.quota.checkWrite(ctx, p.Path, int64(len(content)), int64(len(updated)), false)
	if refused != "" {
		return agent.ErrorResult(refused), nil
	}
	if _, err := writeFile(tg, p.Path, updated); err != nil {
		return errorResult(err), nil
	}
	t.ws.quota.adjust(grow)
	mtime := time.Now()
	if fi, err := tg.area.fs.Stat(tg.rel); err == nil {
		mtime = fi.ModTime()
	}
	t.files.record(tg.abs(), stampOf(updated, mtime))

	diff, first := unifiedDiff(tg.display(), string(bytes.TrimPrefix(content, utf8BOM)), string(bytes.TrimPrefix(updated, utf8BOM)))
	var b strings.Builder
	fmt.Fprintf(&b, "Edited %s: %d replacement%s, first changed line %d.", p.Path, len(pairs), plural(len(pairs)), first)
	if fuzzy {
		b.WriteString(" Some oldText matched only after ignoring trailing whitespace and typographic quotes, dashes and spaces; the file keeps its own characters outside the replaced text.")
	}
	shown := truncate.Head(diff, truncate.Limits{})
	b.WriteString("\n\n")
	b.WriteString(shown.Content)
	if shown.Truncated {
		fmt.Fprintf(&b, "\n\n[Diff cut at %d of %d lines.]", shown.OutputLines, shown.TotalLines)
	}
	return withDetails(agent.TextResult(b.String()), EditDetails{
		Diff: shown.Content, FirstChangedLine: first, Replacements: len(pairs), Fuzzy: fuzzy,
	}), nil
}

// pairs returns the replacements the call asks for, or a message saying what
// is wrong with the arguments.
func (p editParams) pairs() ([]editPair, string) {
	switch {
	case p.Path == "":
		return nil, "path is required"
	case p.OldText != nil && len(p.Edits) > 0:
		return nil, "give either oldText/newText or edits, not both"
	case p.OldText != nil && p.NewText == nil:
		return nil, "newText is required with oldText (use \"\" to delete)"
	case p.OldText != nil:
		return []editPair{{OldText: *p.OldText, NewText: *p.NewText}}, ""
	case len(p.Edits) > 0:
		return p.Edits, ""
	}
	return nil, "give oldText and newText (or edits, a list of them)"
}

// checkRead enforces read-before-edit.
func (t *EditTool) checkRead(tg target, path string, content []byte, mtime time.Time) string {
	stamp, ok := t.files.lookup(tg.abs())
	if !ok {
		return fmt.Sprintf("You have not read %s in this session. Read it first (read tool), then edit it.", path)
	}
	if stamp.size != int64(len(content)) || stamp.sum != crc64.Checksum(content, crcTable) {
		return fmt.Sprintf("%s changed since you last read it (then %s, now %s, modified %s). Read it again before editing.",
			path, truncate.FormatSize(stamp.size), truncate.FormatSize(int64(len(content))), mtime.UTC().Format(time.RFC3339))
	}
	return ""
}

var utf8BOM = []byte("\xef\xbb\xbf")

// applyEdits replaces every pair's oldText in content (without re-encoding
// anything else) and reports whether a forgiving match was needed. A non-empty
// message means nothing was applied.
func applyEdits(content []byte, pairs []editPair, path string) ([]byte, bool, string) {
	bom := 0
	if bytes.HasPrefix(content, utf8BOM) {
		bom = len(utf8BOM)
	}
	body := content[bom:]
	crlf := usesCRLF(body)
	type change struct {
		span
		newText []byte
		index   int
	}
	changes := make([]change, 0, len(pairs))
	fuzzy := false
	for i, pr := range pairs {
		which := ""
		if len(pairs) > 1 {
			which = fmt.Sprintf("edits[%d]: ", i)
		}
		if pr.OldText == "" {
			return nil, false, which + "oldText is empty; give the text to replace"
		}
		sp, n, kind := locate(body, []byte(pr.OldText))
		switch {
		case kind == matchNone:
			return nil, false, fmt.Sprintf("%soldText was not found in %s. It must match the file exactly, including whitespace, indentation and line breaks; read the file again if unsure.", which, path)
		case n > 1:
			return nil, false, fmt.Sprintf("%soldText occurs %d times in %s; it must occur once. Include more surrounding lines to pick one.", which, n, path)
		}
		fuzzy = fuzzy || kind == matchFuzzy
		nt := strings.ReplaceAll(pr.NewText, "\r\n", "\n")
		if crlf {
			nt = strings.ReplaceAll(nt, "\n", "\r\n")
		}
		changes = append(changes, change{span: sp, newText: []byte(nt), index: i})
	}
	slices.SortFunc(changes, func(a, b change) int { return a.start - b.start })
	for i := 1; i < len(changes); i++ {
		if changes[i].start < changes[i-1].end {
			return nil, false, fmt.Sprintf("edits[%d] and edits[%d] overlap in %s; merge them into one edit", changes[i-1].index, changes[i].index, path)
		}
	}
	out := make([]byte, 0, len(content)+64)
	out = append(out, content[:bom]...)
	at := 0
	for _, c := range changes {
		out = append(out, body[at:c.start]...)
		out = append(out, c.newText...)
		at = c.end
	}
	out = append(out, body[at:]...)
	if bytes.Equal(out, content) {
		return nil, false, fmt.Sprintf("newText is the same as the text it would replace; %s is unchanged", path)
	}
	return out, fuzzy, ""
}

// usesCRLF reports whether the file's first line break is CRLF; new text is
// written with the file's convention.
func usesCRLF(b []byte) bool {
	i := bytes.IndexByte(b, '\n')
	return i > 0 && b[i-1] == '\r'
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
