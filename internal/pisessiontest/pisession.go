package pisessiontest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
)

// Entry is a transcript entry.
type Entry = transcript.Entry

// Stats says what LoadStats made of a file.
type Stats struct {
	// Version is the header's session format version (1 when the header has none).
	Version int
	// Malformed counts lines skipped: not JSON, not an object, no "type", or a
	// message that does not decode. Blank lines are not counted.
	Malformed int
	// Unknown counts entries of types this package does not interpret (label,
	// session_info, branch_summary, …). They are returned with Raw set, not dropped.
	Unknown int
	// OffBranch counts entries of a v2+ file that are not on the current branch (the
	// path from the last entry to the root). pi files are trees; only the current
	// branch is returned.
	OffBranch int
}

// Load reads a pi session file (JSONL, format versions 1 to 3) and returns its
// entries in file order. It is LoadStats without the statistics.
func Load(r io.Reader) ([]Entry, error) {
	entries, _, err := LoadStats(r)
	return entries, err
}

// LoadStats reads a pi session file and converts its entries:
//
//   - The first line must be the header {"type":"session", …}; an empty input or
//     another first line is an error. Other unreadable lines are skipped and
//     counted in Stats.Malformed.
//   - Seq is the entry's 0-based position after the header among the lines that
//     are valid JSON — the numbering pi's version-1 firstKeptEntryIndex uses (minus
//     the header). A skipped line that was valid JSON, or an entry off the current
//     branch, leaves a gap in Seq.
//   - message → EntryMessage. Content given as a plain string becomes one text
//     block; bashExecution fields move into Message.Bash; the v2 role hookMessage is
//     renamed custom as pi's v3 migration does. Unknown roles are kept as they are.
//   - custom_message → EntryMessage holding a RoleCustom message (it reaches the
//     model as user content, as in pi).
//   - model_change, thinking_level_change → their entries; custom → EntryCustom.
//   - compaction → EntryCompaction. FirstKeptSeq comes from firstKeptEntryIndex − 1
//     (v1: the index counts the header) or from the Seq of the entry whose id is
//     firstKeptEntryId (v2+); when neither names an entry, nothing before the
//     compaction is kept (FirstKeptSeq = the compaction's Seq), as pi behaves. Read
//     and modified files come from details unless the compaction was made by a hook.
//   - Any other type is kept with Type as written and the line in Raw.
//
// For v2+ files, which are trees, only the current branch is returned.
func LoadStats(r io.Reader) ([]Entry, Stats, error) {
	var st Stats
	var (
		entries  []Entry
		ids      []string // pi id of each returned entry, for branch selection
		parents  []*string
		seqOfID  = map[string]int64{}
		index    = -1 // position among valid-JSON lines; the header is 0
		sawFirst bool
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<30)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		pe := new(piEntry)
		err := json.Unmarshal(line, pe)
		if err == nil || !isSyntaxError(err) {
			index++
		}
		if !sawFirst {
			if err != nil || pe.Type != "session" {
				return nil, st, errors.New("not a pi session: the first line is not a session header")
			}
			sawFirst = true
			st.Version = 1
			if pe.Version > 0 {
				st.Version = pe.Version
			}
			continue
		}
		if err != nil || pe.Type == "" {
			st.Malformed++
			continue
		}
		seq := int64(index - 1)
		seqOf := func(id string) (int64, bool) { s, ok := seqOfID[id]; return s, ok }
		e, ok, unknown := convertPiEntry(pe, line, seq, seqOf)
		if !ok {
			st.Malformed++
			continue
		}
		if unknown {
			st.Unknown++
		}
		entries = append(entries, e)
		ids = append(ids, pe.ID)
		parents = append(parents, pe.ParentID)
		if pe.ID != "" {
			seqOfID[pe.ID] = seq
		}
	}
	if err := sc.Err(); err != nil {
		return nil, st, fmt.Errorf("read pi session: %w", err)
	}
	if !sawFirst {
		return nil, st, errors.New("not a pi session: empty input")
	}
	entries, st.OffBranch = currentBranch(entries, ids, parents)
	return entries, st, nil
}

func isSyntaxError(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se)
}

// currentBranch keeps the entries on the path from the last entry to the root,
// when every entry has an id and the path reaches a root; otherwise (v1 files,
// damaged links) it keeps everything rather than guess.
func currentBranch(entries []Entry, ids []string, parents []*string) ([]Entry, int) {
	if len(entries) == 0 || slices.Contains(ids, "") {
		return entries, 0 // a v1 file, or damaged: keep everything
	}
	pos := make(map[string]int, len(ids))
	for i, id := range ids {
		pos[id] = i
	}
	on := make([]bool, len(entries))
	i := len(entries) - 1
	for steps := 0; steps <= len(entries); steps++ {
		on[i] = true
		p := parents[i]
		if p == nil || *p == "" {
			kept := entries[:0:0]
			for j, e := range entries {
				if on[j] {
					kept = append(kept, e)
				}
			}
			return kept, len(entries) - len(kept)
		}
		next, ok := pos[*p]
		if !ok || on[next] {
			return entries, 0 // a dangling parent or a cycle: do not guess
		}
		i = next
	}
	return entries, 0
}

// piEntry is the union of the fields of pi's session entry types.
type piEntry struct {
	Type      string          `json:"type"`
	Version   int             `json:"version"`
	ID        string          `json:"id"`
	ParentID  *string         `json:"parentId"`
	Timestamp json.RawMessage `json:"timestamp"`

	Message json.RawMessage `json:"message"`

	ThinkingLevel string `json:"thinkingLevel"`
	Provider      string `json:"provider"`
	ModelID       string `json:"modelId"`

	Summary             string          `json:"summary"`
	FirstKeptEntryIndex *int            `json:"firstKeptEntryIndex"`
	FirstKeptEntryID    string          `json:"firstKeptEntryId"`
	TokensBefore        int             `json:"tokensBefore"`
	Details             json.RawMessage `json:"details"`
	FromHook            bool            `json:"fromHook"`

	CustomType string          `json:"customType"`
	Data       json.RawMessage `json:"data"`
	Content    json.RawMessage `json:"content"`
	Display    bool            `json:"display"`
}

// piMessage is the union of the fields of pi's message roles.
type piMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Timestamp json.RawMessage `json:"timestamp"`

	Provider     string     `json:"provider"`
	Model        string     `json:"model"`
	Usage        *llm.Usage `json:"usage"`
	StopReason   string     `json:"stopReason"`
	ErrorMessage string     `json:"errorMessage"`

	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	IsError    bool            `json:"isError"`
	Details    json.RawMessage `json:"details"`

	CustomType string `json:"customType"`
	Display    bool   `json:"display"`

	Summary      string `json:"summary"`
	TokensBefore int    `json:"tokensBefore"`

	Command        string `json:"command"`
	Output         string `json:"output"`
	ExitCode       *int   `json:"exitCode"`
	Cancelled      bool   `json:"cancelled"`
	Truncated      bool   `json:"truncated"`
	FullOutputPath string `json:"fullOutputPath"`
}

// convertPiEntry converts one entry line. ok is false when the entry cannot be
// represented (a message that does not decode); unknown is true when it is kept raw.
func convertPiEntry(pe *piEntry, line []byte, seq int64, seqOf func(id string) (int64, bool)) (e Entry, ok, unknown bool) {
	e = Entry{Seq: seq, Type: transcript.EntryType(pe.Type), Timestamp: piTime(pe.Timestamp)}
	switch pe.Type {
	case "message":
		m, err := convertPiMessage(pe.Message)
		if err != nil {
			return e, false, false
		}
		e.Message = &m
	case "custom_message":
		content, err := piContent(pe.Content)
		if err != nil {
			return e, false, false
		}
		e.Type = transcript.EntryMessage
		e.Message = &llm.Message{
			Role: llm.RoleCustom, CustomType: pe.CustomType, Content: content,
			Display: pe.Display, Details: cloneRaw(pe.Details), Timestamp: e.Timestamp,
		}
	case "model_change":
		e.ModelChange = &transcript.ModelChange{Provider: pe.Provider, Model: pe.ModelID}
	case "thinking_level_change":
		e.ThinkingLevel = pe.ThinkingLevel
	case "custom":
		e.Custom = &transcript.Custom{Kind: pe.CustomType, Data: cloneRaw(pe.Data)}
	case "compaction":
		c := &transcript.Compaction{Summary: pe.Summary, TokensBefore: pe.TokensBefore, FirstKeptSeq: seq}
		switch {
		case pe.FirstKeptEntryID != "":
			if s, found := seqOf(pe.FirstKeptEntryID); found {
				c.FirstKeptSeq = s
			}
		case pe.FirstKeptEntryIndex != nil && *pe.FirstKeptEntryIndex >= 1 && int64(*pe.FirstKeptEntryIndex-1) < seq:
			c.FirstKeptSeq = int64(*pe.FirstKeptEntryIndex - 1)
		}
		if !pe.FromHook && len(pe.Details) > 0 {
			var d struct {
				ReadFiles     []string `json:"readFiles"`
				ModifiedFiles []string `json:"modifiedFiles"`
			}
			if json.Unmarshal(pe.Details, &d) == nil {
				c.ReadFiles, c.ModifiedFiles = d.ReadFiles, d.ModifiedFiles
			}
		}
		e.Compaction = c
	default:
		e.Raw = cloneRaw(line)
		return e, true, true
	}
	return e, true, false
}

func convertPiMessage(raw json.RawMessage) (llm.Message, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return llm.Message{}, errors.New("message is not an object")
	}
	var pm piMessage
	if err := json.Unmarshal(raw, &pm); err != nil {
		return llm.Message{}, err
	}
	content, err := piContent(pm.Content)
	if err != nil {
		return llm.Message{}, err
	}
	if pm.Role == "" {
		return llm.Message{}, errors.New("message has no role")
	}
	m := llm.Message{
		Role: llm.Role(pm.Role), Content: content, Timestamp: piTime(pm.Timestamp),
		Provider: pm.Provider, Model: pm.Model, Usage: pm.Usage,
		StopReason: llm.StopReason(pm.StopReason), ErrorMessage: pm.ErrorMessage,
		ToolCallID: pm.ToolCallID, ToolName: pm.ToolName, IsError: pm.IsError, Details: cloneRaw(pm.Details),
		CustomType: pm.CustomType, Display: pm.Display,
		Summary: pm.Summary, TokensBefore: pm.TokensBefore,
	}
	if m.Role == "hookMessage" {
		m.Role = llm.RoleCustom // pi's v2 → v3 migration
	}
	if m.Role == llm.RoleBashExecution {
		m.Bash = &llm.BashExecution{
			Command: pm.Command, Output: pm.Output, ExitCode: pm.ExitCode,
			Cancelled: pm.Cancelled, Truncated: pm.Truncated, FullOutputPath: pm.FullOutputPath,
		}
	}
	return m, nil
}

// piContent decodes content that pi writes either as a string or as blocks.
func piContent(raw json.RawMessage) ([]llm.Content, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []llm.Content{llm.Text(s)}, nil
	}
	var blocks []llm.Content
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, err
	}
	return blocks, nil
}

// piTime converts pi's timestamps — ISO 8601 strings on entries, Unix milliseconds
// on messages — to Unix milliseconds; anything else is 0.
func piTime(raw json.RawMessage) int64 {
	if len(raw) == 0 {
		return 0
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return 0
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0
		}
		return t.UnixMilli()
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil {
		return 0
	}
	return int64(f)
}

func cloneRaw(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}
