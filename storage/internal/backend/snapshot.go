package backend

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"unsafe"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
)

// A snapshot is a session's live entries (LiveEntries) in one binary value,
// stored beside the entries so that a resume reads one row and decodes it by
// slicing instead of reading a row and parsing JSON per entry. The entries'
// rows stay the record: a snapshot is derived from them, says the last seq it
// covers, and is only ever a shortcut to what reading them would give. One
// that cannot be used (absent, of another format, damaged, or overtaken by a
// compaction it cannot follow) sends the reader back to the rows.
//
// Format (all integers varints unless said): the 4-byte magic, counts of
// entries, content blocks, usages and costs (so the decoder allocates each
// kind once), the entries, and a little-endian CRC-32C of everything before
// it. A message is its fields in a fixed order; the other entry types, rare
// and small, are their stored JSON payload.
//
// A change of the format is a new magic: snapshots of another format are not
// read, and the next one written replaces them.
var snapshotMagic = [4]byte{'t', 's', 's', 1}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Entry kinds in a snapshot.
const (
	kindMessage = 0
	kindJSON    = 1
)

// Flags of a message and of a content block.
const (
	flagUsage     = 1 << 0
	flagCost      = 1 << 1
	flagIsError   = 1 << 2
	flagDisplay   = 1 << 3
	flagErrorInfo = 1 << 4
	flagBash      = 1 << 5
)

// LiveEntries returns the entries a session's context is built from, in the
// order given: those from the latest compaction's first kept entry on, and
// the model and thinking-level changes before it. It is what both backends'
// live-entry queries select.
func LiveEntries(entries []transcript.Entry) []transcript.Entry {
	firstKept := FirstKept(entries)
	if firstKept < 0 {
		return entries
	}
	out := make([]transcript.Entry, 0, len(entries))
	for _, e := range entries {
		if e.Seq >= firstKept || e.Type == transcript.EntryModelChange || e.Type == transcript.EntryThinkingLevel {
			out = append(out, e)
		}
	}
	return out
}

// FirstKept is the first kept seq of the latest compaction (by seq) among
// entries, -1 when there is none.
func FirstKept(entries []transcript.Entry) int64 {
	var latest *transcript.Entry
	for i := range entries {
		e := &entries[i]
		if e.Type == transcript.EntryCompaction && e.Compaction != nil && (latest == nil || e.Seq > latest.Seq) {
			latest = e
		}
	}
	if latest == nil {
		return -1
	}
	return latest.Compaction.FirstKeptSeq
}

// FromSnapshot returns a session's live entries from its snapshot's entries
// and the entries stored after it (tail, every entry with a greater seq),
// and false when the two cannot give them: a compaction in the tail that
// keeps entries from before the snapshot's own first kept entry (the
// snapshot left those out). The result is in Seq order.
func FromSnapshot(snap, tail []transcript.Entry) ([]transcript.Entry, bool) {
	if len(tail) == 0 {
		return snap, true
	}
	if fk := FirstKept(tail); fk >= 0 && fk < FirstKept(snap) {
		return nil, false
	}
	all := make([]transcript.Entry, 0, len(snap)+len(tail))
	all = append(append(all, snap...), tail...)
	return LiveEntries(all), true
}

// SaveSnapshot stores a session's snapshot of entries (its live entries as
// read): $1 the session's row id, $2 the last seq it holds, $3 the
// snapshot, $4 the entries' first kept seq (FirstKept), $5 their number.
// It is stored only if the rows that are live as of $2 still number $5: an
// entry stored below $2 after they were read (a gap filled late) would be
// missing from it, and from every resume after. An append made after it is
// stored drops it (an entry at or below its last seq). One up to a lower
// seq than the stored one is not stored; one up to the same seq replaces it
// (its writer could not use the stored one).
const SaveSnapshot = `INSERT INTO session_snapshots (session_id, upto, snapshot)
	SELECT $1, $2, $3
	WHERE (SELECT count(*) FROM entries WHERE session_id = $1 AND seq >= $4 AND seq <= $2)
	    + (SELECT count(*) FROM entries WHERE session_id = $1 AND seq < $4
	       AND type IN ('model_change', 'thinking_level_change')) = $5
	ON CONFLICT (session_id) DO UPDATE SET upto = excluded.upto, snapshot = excluded.snapshot
	WHERE excluded.upto >= session_snapshots.upto`

// SaveSnapshotArgs returns SaveSnapshot's arguments for a session (its row
// id) and its live entries as read (at least one).
func SaveSnapshotArgs(sessionRow int64, entries []transcript.Entry) ([]any, error) {
	snap, err := EncodeSnapshot(entries)
	if err != nil {
		return nil, err
	}
	return []any{sessionRow, entries[len(entries)-1].Seq, snap, FirstKept(entries), int64(len(entries))}, nil
}

// EncodeSnapshot encodes entries (a session's live entries) as a snapshot.
func EncodeSnapshot(entries []transcript.Entry) ([]byte, error) {
	var nContent, nUsage, nCost int
	size := 64
	for _, e := range entries {
		if e.Type == transcript.EntryMessage && e.Message != nil {
			m := e.Message
			nContent += len(m.Content)
			if m.Usage != nil {
				nUsage++
				if m.Usage.Cost != nil {
					nCost++
				}
			}
			size += 64 + len(m.Details) + len(m.ErrorMessage) + len(m.Summary)
			for _, c := range m.Content {
				size += 32 + len(c.Text) + len(c.Thinking) + len(c.Signature) + len(c.Data) + len(c.Arguments) + len(c.RawArguments)
			}
		} else {
			size += 256
		}
	}
	w := snapWriter{b: make([]byte, 0, size)}
	w.b = append(w.b, snapshotMagic[:]...)
	w.uint(uint64(len(entries)))
	w.uint(uint64(nContent))
	w.uint(uint64(nUsage))
	w.uint(uint64(nCost))
	for _, e := range entries {
		w.int(e.Seq)
		w.str(string(e.Type))
		w.int(e.Timestamp)
		if e.Type == transcript.EntryMessage && e.Message != nil {
			w.b = append(w.b, kindMessage)
			if err := w.message(e.Message); err != nil {
				return nil, fmt.Errorf("entry seq %d: %w", e.Seq, err)
			}
			continue
		}
		r, err := Encode(e)
		if err != nil {
			return nil, err
		}
		w.b = append(w.b, kindJSON)
		w.str(r.Payload)
	}
	return binary.LittleEndian.AppendUint32(w.b, crc32.Checksum(w.b, castagnoli)), nil
}

type snapWriter struct{ b []byte }

func (w *snapWriter) uint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *snapWriter) int(v int64)   { w.b = binary.AppendVarint(w.b, v) }
func (w *snapWriter) str(s string) {
	w.uint(uint64(len(s)))
	w.b = append(w.b, s...)
}

func (w *snapWriter) message(m *llm.Message) error {
	var flags byte
	if m.Usage != nil {
		flags |= flagUsage
		if m.Usage.Cost != nil {
			flags |= flagCost
		}
	}
	if m.IsError {
		flags |= flagIsError
	}
	if m.Display {
		flags |= flagDisplay
	}
	if m.ErrorInfo != nil {
		flags |= flagErrorInfo
	}
	if m.Bash != nil {
		flags |= flagBash
	}
	w.b = append(w.b, flags)
	w.str(string(m.Role))
	w.int(m.Timestamp)
	w.str(m.Provider)
	w.str(m.Model)
	if u := m.Usage; u != nil {
		w.int(int64(u.Input))
		w.int(int64(u.Output))
		w.int(int64(u.CacheRead))
		w.int(int64(u.CacheWrite))
		w.int(int64(u.TotalTokens))
		if c := u.Cost; c != nil {
			for _, f := range [...]float64{c.Input, c.Output, c.CacheRead, c.CacheWrite, c.Total} {
				w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(f))
			}
		}
	}
	w.str(string(m.StopReason))
	w.str(m.ErrorMessage)
	// The typed error and a pi bash execution are rare: their JSON.
	for _, v := range []any{nonNil(m.ErrorInfo), nonNil(m.Bash)} {
		if v == nil {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		w.str(string(b))
	}
	w.str(m.ToolCallID)
	w.str(m.ToolName)
	w.str(string(m.Details))
	w.str(m.CustomType)
	w.str(m.Summary)
	w.int(int64(m.TokensBefore))
	w.str(m.InputID)
	w.uint(uint64(len(m.Content)))
	for i := range m.Content {
		c := &m.Content[i]
		w.str(string(c.Type))
		w.str(c.Text)
		w.str(c.Thinking)
		w.str(c.Signature)
		w.str(c.MimeType)
		w.str(c.Data)
		w.str(c.ID)
		w.str(c.Name)
		w.str(string(c.Arguments))
		w.str(c.RawArguments)
		// The UTF-16 lengths travel with the texts, as the JSON decoder
		// carries them: token estimates never count them again.
		w.uint(uint64(c.TextUnits()))
		w.uint(uint64(c.ThinkingUnits()))
	}
	return nil
}

// errSnapshot is a snapshot that does not decode: damaged, cut, or not one.
var errSnapshot = errors.New("snapshot does not decode")

// DecodeSnapshot decodes a snapshot. b becomes the decoder's: the entries'
// strings share its memory, so nothing may write it again. A snapshot of
// another format, or one that fails its checksum or does not decode, is an
// error wrapping storage.ErrCorrupt; its reader uses the entries' rows.
func DecodeSnapshot(b []byte) (entries []transcript.Entry, err error) {
	if len(b) < len(snapshotMagic)+4 || [4]byte(b[:4]) != snapshotMagic {
		return nil, fmt.Errorf("%w: %w: not of this format", storage.ErrCorrupt, errSnapshot)
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, fmt.Errorf("%w: %w: checksum", storage.ErrCorrupt, errSnapshot)
	}
	r := snapReader{b: body, off: len(snapshotMagic)}
	nEntries, nContent, nUsage, nCost := r.count(minEntryBytes), r.count(minBlockBytes), r.count(minUsageBytes), r.count(minCostBytes)
	if r.err != nil {
		return nil, fmt.Errorf("%w: %w", storage.ErrCorrupt, r.err)
	}
	entries = make([]transcript.Entry, nEntries)
	msgs := make([]llm.Message, 0, nEntries)
	blocks := make([]llm.Content, nContent)
	usages := make([]llm.Usage, nUsage)
	costs := make([]llm.Cost, nCost)
	for i := range entries {
		e := &entries[i]
		e.Seq = r.int()
		e.Type = transcript.EntryType(r.str())
		e.Timestamp = r.int()
		switch kind := r.byte(); {
		case kind == kindMessage && e.Type == transcript.EntryMessage:
			msgs = append(msgs, llm.Message{})
			m := &msgs[len(msgs)-1]
			r.message(m, &blocks, &usages, &costs)
			e.Message = m
		case kind == kindJSON:
			payload := r.raw()
			if r.err == nil {
				var derr error
				if *e, derr = decodeEntry(e.Seq, string(e.Type), e.Timestamp, payload, nil, nil); derr != nil {
					return nil, derr
				}
			}
		default:
			r.fail("entry kind")
		}
		if r.err != nil {
			return nil, fmt.Errorf("%w: entry %d of %d: %w", storage.ErrCorrupt, i, nEntries, r.err)
		}
	}
	if r.off != len(r.b) {
		return nil, fmt.Errorf("%w: %w: %d bytes after the entries", storage.ErrCorrupt, errSnapshot, len(r.b)-r.off)
	}
	return entries, nil
}

// snapReader reads a snapshot's body; the first error sticks and every read
// after it returns zero values.
type snapReader struct {
	b   []byte
	off int
	err error
}

func (r *snapReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w at byte %d (%s)", errSnapshot, r.off, what)
	}
	r.off = len(r.b)
}

func (r *snapReader) uint() uint64 {
	v, n := binary.Uvarint(r.b[r.off:])
	if n <= 0 {
		r.fail("varint")
		return 0
	}
	r.off += n
	return v
}

func (r *snapReader) int() int64 {
	v, n := binary.Varint(r.b[r.off:])
	if n <= 0 {
		r.fail("varint")
		return 0
	}
	r.off += n
	return v
}

// The fewest bytes an entry, a content block, a usage and a cost take in a
// snapshot (every length and number one byte).
const (
	minEntryBytes = 4  // seq, type, timestamp, kind
	minBlockBytes = 12 // ten lengths, two UTF-16 lengths
	minUsageBytes = 5
	minCostBytes  = 40
)

// count reads a count of things that take at least size bytes each, no more
// than the bytes left can hold: a count that lies (a snapshot damaged with a
// good checksum) cannot make the decoder allocate more than about a hundred
// times the snapshot's size.
func (r *snapReader) count(size int) int {
	v := r.uint()
	if v > uint64((len(r.b)-r.off)/size) {
		r.fail("count")
		return 0
	}
	return int(v)
}

func (r *snapReader) byte() byte {
	if r.off >= len(r.b) {
		r.fail("byte")
		return 0
	}
	r.off++
	return r.b[r.off-1]
}

// raw returns the next length-prefixed bytes, sharing the snapshot's memory
// (capacity cut, so an append to them copies).
func (r *snapReader) raw() []byte {
	n := r.uint()
	if n > uint64(len(r.b)-r.off) {
		r.fail("length")
		return nil
	}
	if n == 0 {
		return nil
	}
	s := r.b[r.off : r.off+int(n) : r.off+int(n)]
	r.off += int(n)
	return s
}

// str returns the next string, sharing the snapshot's memory.
func (r *snapReader) str() string {
	b := r.raw()
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func (r *snapReader) float() float64 {
	if len(r.b)-r.off < 8 {
		r.fail("float")
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(r.b[r.off:]))
	r.off += 8
	return v
}

// take returns the next of a slab's elements, or a fresh one when a damaged
// count made the slab too short.
func take[T any](slab *[]T) *T {
	if len(*slab) == 0 {
		return new(T)
	}
	p := &(*slab)[0]
	*slab = (*slab)[1:]
	return p
}

func (r *snapReader) message(m *llm.Message, blocks *[]llm.Content, usages *[]llm.Usage, costs *[]llm.Cost) {
	flags := r.byte()
	m.Role = llm.Role(r.str())
	m.Timestamp = r.int()
	m.Provider = r.str()
	m.Model = r.str()
	if flags&flagUsage != 0 {
		u := take(usages)
		u.Input, u.Output, u.CacheRead, u.CacheWrite, u.TotalTokens = int(r.int()), int(r.int()), int(r.int()), int(r.int()), int(r.int())
		if flags&flagCost != 0 {
			c := take(costs)
			c.Input, c.Output, c.CacheRead, c.CacheWrite, c.Total = r.float(), r.float(), r.float(), r.float(), r.float()
			u.Cost = c
		}
		m.Usage = u
	}
	m.StopReason = llm.StopReason(r.str())
	m.ErrorMessage = r.str()
	if flags&flagErrorInfo != 0 {
		m.ErrorInfo = new(llm.Error)
		r.json(m.ErrorInfo)
	}
	if flags&flagBash != 0 {
		m.Bash = new(llm.BashExecution)
		r.json(m.Bash)
	}
	m.IsError = flags&flagIsError != 0
	m.Display = flags&flagDisplay != 0
	m.ToolCallID = r.str()
	m.ToolName = r.str()
	m.Details = r.raw()
	m.CustomType = r.str()
	m.Summary = r.str()
	m.TokensBefore = int(r.int())
	m.InputID = r.str()
	n := r.count(minBlockBytes)
	if n > len(*blocks) || r.err != nil {
		r.fail("content count")
		return
	}
	if n > 0 {
		m.Content = (*blocks)[:n:n]
		*blocks = (*blocks)[n:]
	}
	for i := range m.Content {
		c := &m.Content[i]
		c.Type = llm.ContentType(r.str())
		c.Text = r.str()
		c.Thinking = r.str()
		c.Signature = r.str()
		c.MimeType = r.str()
		c.Data = r.str()
		c.ID = r.str()
		c.Name = r.str()
		c.Arguments = r.raw()
		c.RawArguments = r.str()
		tu, hu := r.uint(), r.uint()
		if r.err != nil {
			return
		}
		c.SetTextUnits(int(tu))
		c.SetThinkingUnits(int(hu))
	}
}

func (r *snapReader) json(v any) {
	b := r.raw()
	if r.err != nil {
		return
	}
	if err := json.Unmarshal(b, v); err != nil {
		r.fail("json: " + err.Error())
	}
}
