package compaction

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/internal/msgjson"
)

// Entry is a session entry; compaction works on the transcript's own type.
type Entry = transcript.Entry

// LoadStats says what LoadPiSessionStats made of a file.
type LoadStats struct {
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

// LoadPiSession reads a pi session file (JSONL, format versions 1 to 3) and returns
// its entries in file order. It is LoadPiSessionStats without the statistics.
func LoadPiSession(r io.Reader) ([]Entry, error) {
	entries, _, err := LoadPiSessionStats(r)
	return entries, err
}

// LoadPiSessionStats reads a pi session file and converts its entries:
//
//   - The first line must be the header {"type":"session", …}; an empty input or
//     another first line is an error. Other unreadable lines are skipped and
//     counted in LoadStats.Malformed.
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
//   - Any other type is kept with Type as written and the line in Raw. (A line
//     whose "type" comes after strings with escapes, which pi never writes, may
//     have those strings spelled again: the same JSON.)
//
// For v2+ files, which are trees, only the current branch is returned.
func LoadPiSessionStats(r io.Reader) ([]Entry, LoadStats, error) {
	lines, err := readLines(r)
	if err != nil {
		return nil, LoadStats{}, fmt.Errorf("read pi session: %w", err)
	}
	return parseLines(lines)
}

// ParsePiSession is LoadPiSession for a session file already in memory, the
// operation pi's own loader (parseSessionEntries) is: it reads no input. It
// takes data for the entries, which point into it (their strings with
// escapes unescaped over their own text), so the caller must neither use nor
// modify data afterwards.
func ParsePiSession(data []byte) ([]Entry, error) {
	entries, _, err := ParsePiSessionStats(data)
	return entries, err
}

// ParsePiSessionStats is LoadPiSessionStats for a session already in memory,
// taking data as ParsePiSession does.
func ParsePiSessionStats(data []byte) ([]Entry, LoadStats, error) {
	return parseLines(splitLines(data))
}

// parseLines converts the non-blank, trimmed lines of a session file, which
// it takes (see ParsePiSession), as LoadPiSessionStats describes.
func parseLines(lines [][]byte) ([]Entry, LoadStats, error) {
	var st LoadStats
	fast := decodeMessageLines(lines)
	n := len(lines)
	var (
		entries  = make([]Entry, 0, n)
		ids      = make([]string, 0, n) // pi id of each returned entry, for branch selection
		parents  = make([]*string, 0, n)
		seqOfID  map[string]int64 // the Seq of each id in ids[:mapped], once looked up often
		mapped   int
		scanned  int  // entries compared by seqOf before it made seqOfID
		index    = -1 // position among valid-JSON lines; the header is 0
		sawFirst bool
	)
	for i, line := range lines {
		// Message lines, nearly all of a session, were decoded in
		// parallel (see decodeMessageLines); the header and every
		// other line are decoded here.
		if f := &fast[i]; sawFirst && f.decoded {
			index++
			if f.malformed {
				st.Malformed++
				continue
			}
			seq := int64(index - 1)
			f.entry.Seq = seq
			entries = append(entries, f.entry)
			ids = append(ids, f.id)
			parents = append(parents, f.parent)
			continue
		}
		pe, err := fast[i].pe, fast[i].err
		if pe == nil {
			pe = new(piEntry)
			err = json.Unmarshal(line, pe)
		}
		validJSON := err == nil || !isSyntaxError(err)
		if validJSON {
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
		} else if err != nil || pe.Type == "" {
			st.Malformed++
		} else {
			seq := int64(index - 1)
			// Ids are looked up only by compactions, for the entries so
			// far (a later duplicate id wins, as ever). The id a
			// compaction keeps from is usually among the last ones:
			// they are looked at from the end, until the lookups have
			// compared more ids than a map of them costs to make.
			seqOf := func(id string) (int64, bool) {
				if seqOfID == nil && scanned <= 4*len(entries)+1024 {
					for j := len(entries) - 1; j >= 0; j-- {
						scanned++
						if ids[j] == id && id != "" {
							return entries[j].Seq, true
						}
					}
					return 0, false
				}
				if seqOfID == nil {
					seqOfID = make(map[string]int64, len(entries))
				}
				for ; mapped < len(entries); mapped++ {
					if ids[mapped] != "" {
						seqOfID[ids[mapped]] = entries[mapped].Seq
					}
				}
				s, ok := seqOfID[id]
				return s, ok
			}
			e, ok, unknown := convertPiEntry(pe, line, seq, seqOf)
			switch {
			case !ok:
				st.Malformed++
			default:
				if unknown {
					st.Unknown++
				}
				entries = append(entries, e)
				ids = append(ids, pe.ID)
				parents = append(parents, pe.ParentID)
			}
		}
	}
	if !sawFirst {
		return nil, st, errors.New("not a pi session: empty input")
	}
	entries, st.OffBranch = currentBranch(entries, ids, parents)
	return entries, st, nil
}

// linear reports whether each entry's parent is the entry before it (and the
// first one's is none or unknown), as in a session that never branched:
// the current branch is then all of them, whatever currentBranch's walk would
// meet (a missing id, a repeated one). It spares the map of every id.
func linear(ids []string, parents []*string) bool {
	for i := range ids {
		if ids[i] == "" {
			return false
		}
		if i > 0 && (parents[i] == nil || *parents[i] != ids[i-1]) {
			return false
		}
	}
	return true
}

// fastLine is a line decoded ahead of the in-order pass.
type fastLine struct {
	decoded   bool // the fast path decided; otherwise the line is decoded in order
	malformed bool // valid JSON, but not a message compaction can use
	entry     Entry
	id        string
	parent    *string
	// pe and err are encoding/json's reading of a line the fast path
	// refused (a compaction, a model change, a message it does not take),
	// made by the same worker when pe is not nil: the in-order pass only
	// converts it. A generated session's 22 compactions, read in order,
	// were most of that pass.
	pe  *piEntry
	err error
}

// fastPath is turned off by a test that compares with encoding/json alone.
var fastPath = true

// parallelBytes is the session size from which reading it, splitting it
// into lines and decoding its message lines are done on all cores: each
// line decodes on its own, and decoding is nearly all of the time a load
// takes.
const parallelBytes = 256 << 10

// readLines reads r whole into a buffer of its own and returns the
// non-blank lines of it, trimmed. A large session that r can read at offsets (a file, a
// bytes.Reader) is read in parts on all cores, each part split into lines
// by the goroutine that read it; r is then left at its end, as a
// sequential read leaves it.
func readLines(r io.Reader) ([][]byte, error) {
	size := -1
	switch v := r.(type) {
	case interface{ Len() int }:
		size = v.Len()
	case interface{ Stat() (fs.FileInfo, error) }:
		if fi, err := v.Stat(); err == nil && fi.Mode().IsRegular() {
			size = int(fi.Size())
		}
	}
	if size < 0 {
		data, err := io.ReadAll(r)
		if err != nil {
			return nil, err
		}
		return splitLines(data), nil
	}
	// +1: EOF is seen without growing. Read overwrites what is used, so
	// the buffer is not cleared first.
	buf := msgjson.MakeNoZero(size + 1)[:0]
	n, lines, ok := readParallel(r, buf[:size])
	buf = buf[:n]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // it grew after all
		}
		m, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if !ok || len(buf) > n {
		// Read in one piece, or the file grew while it was read in parts
		// (its last line may go on).
		lines = splitLines(buf)
	}
	return lines, nil
}

// part is a part of a session's buffer and the lines split from it.
type part struct {
	from, to int
	lines    [][]byte // those that start and end in it, trimmed and non-blank
	cut      int      // the start of a line that runs past to; -1: none
}

// splitLines returns the non-blank lines of data, trimmed, split in parts
// on all cores when data is large.
func splitLines(data []byte) [][]byte {
	n := runtime.GOMAXPROCS(0)
	if len(data) < parallelBytes {
		n = 1
	}
	return splitInParts(data, makeParts(len(data), n))
}

// splitInParts splits data's parts on a goroutine each and joins them.
func splitInParts(data []byte, parts []part) [][]byte {
	if len(parts) == 1 {
		parts[0].split(data)
	} else {
		var wg sync.WaitGroup
		for i := range parts {
			wg.Go(func() { parts[i].split(data) })
		}
		wg.Wait()
	}
	return joinParts(data, parts)
}

// makeParts cuts size bytes into n parts.
func makeParts(size, n int) []part {
	parts := make([]part, n)
	per := (size + n - 1) / n
	for i := range parts {
		parts[i] = part{from: min(i*per, size), to: min((i+1)*per, size), cut: -1}
	}
	return parts
}

// split finds the lines of p, reading only data[p.from:p.to]: a line starts
// at 0 or after a '\n'. A line that starts at p.from (after a '\n' in the
// part before) and the end of the line at p.cut are found by joinParts.
func (p *part) split(data []byte) {
	start := p.from
	if start > 0 {
		i := bytes.IndexByte(data[start:p.to], '\n')
		if i < 0 {
			return // no line starts after p.from in the part
		}
		start += i + 1
	}
	for start < p.to {
		line := data[start:p.to]
		i := bytes.IndexByte(line, '\n')
		switch {
		case i >= 0:
			line = line[:i]
		case p.to < len(data):
			p.cut = start
			return
		}
		start += len(line) + 1
		if line = bytes.TrimSpace(line); len(line) > 0 {
			p.lines = append(p.lines, line[:len(line):len(line)])
		}
	}
}

// joinParts puts the parts' lines together with those split finds at their
// edges, in order.
func joinParts(data []byte, parts []part) [][]byte {
	n := 0
	for _, p := range parts {
		n += len(p.lines) + 2
	}
	lines := make([][]byte, 0, n)
	whole := func(start int) {
		line := data[start:]
		if i := bytes.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			lines = append(lines, line[:len(line):len(line)])
		}
	}
	for _, p := range parts {
		if p.from > 0 && p.from < p.to && data[p.from-1] == '\n' {
			whole(p.from)
		}
		lines = append(lines, p.lines...)
		if p.cut >= 0 {
			whole(p.cut)
		}
	}
	return lines
}

// decodeMessageLines decodes the message lines among lines (all but the
// first, the header) with the fast path, on all cores for a large session.
func decodeMessageLines(lines [][]byte) []fastLine {
	out := make([]fastLine, len(lines))
	if !fastPath || len(lines) < 2 {
		return out
	}
	// The lines are parts of the buffer readLines made, which nothing
	// else reads or writes: the messages' strings share it, those with
	// escapes unescaped over their own bytes
	// (msgjson.DecodePiMessageLineInPlace), and the messages of a run of
	// lines are one allocation.
	decode := func(from, to int, a *msgjson.Arena) {
		from = max(from, 1) // the header: the in-order pass reads it as it is
		var msgs []llm.Message
		for i := from; i < to; i++ {
			l, ok, slow := msgjson.DecodePiMessageLineInPlace(lines[i], a)
			f := &out[i]
			if !ok {
				lines[i] = slow
				f.pe = new(piEntry)
				f.err = json.Unmarshal(slow, f.pe)
				continue
			}
			f.decoded = true
			m, err := fromPiMessage(l.Message)
			if err != nil {
				f.malformed = true
				continue
			}
			if msgs == nil {
				msgs = make([]llm.Message, to-i)
			}
			p := &msgs[0]
			*p, msgs = m, msgs[1:]
			f.entry = Entry{Type: transcript.EntryMessage, Timestamp: piTime(l.Timestamp), Message: p}
			f.id, f.parent = l.ID, l.ParentID
		}
	}
	size := 0
	for _, l := range lines {
		size += len(l)
	}
	workers := runtime.GOMAXPROCS(0)
	if size < parallelBytes || workers == 1 {
		decode(0, len(lines), new(msgjson.Arena))
		return out
	}
	// Chunks of lines handed out in order; many more chunks than workers
	// keep the cores busy when line sizes vary.
	const chunk = 32
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			a := new(msgjson.Arena)
			for {
				from := int(next.Add(chunk)) - chunk
				if from >= len(lines) {
					return
				}
				decode(from, min(from+chunk, len(lines)), a)
			}
		})
	}
	wg.Wait()
	return out
}

// readParallel reads the rest of r into buf, at most len(buf) bytes, in parts
// on all cores, when r reads at offsets and seeks and the session is large;
// each part is split into lines as it is read (see part.split, joinParts).
// It returns how many bytes it read, with r moved past them, and the lines;
// ok is false when it read nothing (r not moved), and reading goes on from
// r's position.
func readParallel(r io.Reader, buf []byte) (int, [][]byte, bool) {
	ra, isAt := r.(io.ReaderAt)
	sk, isSeeker := r.(io.Seeker)
	if !isAt || !isSeeker || runtime.GOMAXPROCS(0) == 1 || len(buf) < parallelBytes {
		return 0, nil, false
	}
	off, err := sk.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, nil, false
	}
	if _, isFile := r.(interface{ Stat() (fs.FileInfo, error) }); isFile {
		// A file's size is its whole length; the rest is what is after
		// the position.
		if off >= int64(len(buf)) {
			return 0, nil, false
		}
		buf = buf[:int64(len(buf))-off]
	}
	ps := makeParts(len(buf), runtime.GOMAXPROCS(0))
	var short atomic.Bool
	var wg sync.WaitGroup
	for i := range ps {
		p := &ps[i]
		wg.Go(func() {
			if n, _ := ra.ReadAt(buf[p.from:p.to], off+int64(p.from)); n < p.to-p.from {
				short.Store(true) // an error, or the file shrank
				return
			}
			p.split(buf) // reads only the part just read
		})
	}
	wg.Wait()
	if short.Load() {
		return 0, nil, false
	}
	if _, err := sk.Seek(off+int64(len(buf)), io.SeekStart); err != nil {
		return 0, nil, false
	}
	return len(buf), joinParts(buf, ps), true
}

func isSyntaxError(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se)
}

// currentBranch keeps the entries on the path from the last entry to the root,
// when every entry has an id and the path reaches a root; otherwise (v1 files,
// damaged links) it keeps everything rather than guess.
func currentBranch(entries []Entry, ids []string, parents []*string) ([]Entry, int) {
	if len(entries) == 0 || linear(ids, parents) {
		return entries, 0
	}
	return walkBranch(entries, ids, parents)
}

// walkBranch is currentBranch without its shortcut for linear sessions: it
// follows the parents from the last entry.
func walkBranch(entries []Entry, ids []string, parents []*string) ([]Entry, int) {
	if slices.Contains(ids, "") {
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
	pm, ok := msgjson.DecodePiMessage(raw)
	if !ok {
		var err error
		if pm, err = decodePiMessageSlow(raw); err != nil {
			return llm.Message{}, err
		}
	}
	return fromPiMessage(pm)
}

// decodePiMessageSlow is DecodePiMessage with encoding/json, for what the
// fast path leaves alone; it decides what is malformed.
func decodePiMessageSlow(raw json.RawMessage) (msgjson.PiMessage, error) {
	var pm piMessage
	if err := json.Unmarshal(raw, &pm); err != nil {
		return msgjson.PiMessage{}, err
	}
	content, err := piContent(pm.Content)
	if err != nil {
		return msgjson.PiMessage{}, err
	}
	return msgjson.PiMessage{
		Message: llm.Message{
			Role: llm.Role(pm.Role), Content: content,
			Provider: pm.Provider, Model: pm.Model, Usage: pm.Usage,
			StopReason: llm.StopReason(pm.StopReason), ErrorMessage: pm.ErrorMessage,
			ToolCallID: pm.ToolCallID, ToolName: pm.ToolName, IsError: pm.IsError, Details: cloneRaw(pm.Details),
			CustomType: pm.CustomType, Display: pm.Display,
			Summary: pm.Summary, TokensBefore: pm.TokensBefore,
		},
		Timestamp: pm.Timestamp, Command: pm.Command, Output: pm.Output, ExitCode: pm.ExitCode,
		Cancelled: pm.Cancelled, Truncated: pm.Truncated, FullOutputPath: pm.FullOutputPath,
	}, nil
}

// fromPiMessage converts a decoded pi message: the v2 role hookMessage is
// renamed custom as pi's v3 migration does, timestamps become Unix
// milliseconds, bashExecution fields move into Message.Bash.
func fromPiMessage(pm msgjson.PiMessage) (llm.Message, error) {
	if pm.Role == "" {
		return llm.Message{}, errors.New("message has no role")
	}
	m := pm.Message
	if m.Role == "hookMessage" {
		m.Role = llm.RoleCustom // pi's v2 → v3 migration
	}
	m.Timestamp = piTime(pm.Timestamp)
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
	// The usual forms without encoding/json: a quoted ISO time without
	// escapes, and an integer small enough to be exact as a float64 (the
	// float64 below is what a JavaScript number is).
	if n := len(raw); n > 2 && raw[0] == '"' && raw[n-1] == '"' && bytes.IndexByte(raw[1:n-1], '\\') < 0 && bytes.IndexByte(raw[1:n-1], '"') < 0 {
		t, err := time.Parse(time.RFC3339Nano, string(raw[1:n-1]))
		if err != nil {
			return 0
		}
		return t.UnixMilli()
	}
	if len(raw) <= 15 {
		if v, err := strconv.ParseInt(string(raw), 10, 64); err == nil && (raw[0] != '0' || len(raw) == 1) && raw[0] != '+' {
			return v
		}
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
