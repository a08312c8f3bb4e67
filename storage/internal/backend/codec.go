package backend

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"unsafe"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/internal/msgjson"
	"github.com/threadsmith/threadsmith/storage"
)

// Row is an entry as both backends store it: Payload is the JSON of the part
// of the entry its type uses (the message, the compaction, …), so SQL can
// look into it and nothing is stored twice.
type Row struct {
	Seq     int64
	Type    string
	TS      int64
	Payload string
	// InputID is the inbound id of the chat input a user message came from
	// (llm.Message.InputID), 0 for none: AppendEntries delivers it in the
	// same transaction.
	InputID int64
}

// Encode validates and encodes an entry for storing: a negative seq, a
// missing type, or a type without its payload is refused. An entry of a type
// this version does not know keeps its raw JSON.
func Encode(e transcript.Entry) (Row, error) {
	r := Row{Seq: e.Seq, Type: string(e.Type), TS: e.Timestamp, InputID: inputOf(e)}
	if e.Seq < 0 {
		return r, fmt.Errorf("entry seq %d: seq must not be negative", e.Seq)
	}
	if e.Type == "" {
		return r, fmt.Errorf("entry seq %d: no type", e.Seq)
	}
	var v any
	switch e.Type {
	case transcript.EntryMessage:
		v = nonNil(e.Message)
	case transcript.EntryCompaction:
		v = nonNil(e.Compaction)
	case transcript.EntryModelChange:
		v = nonNil(e.ModelChange)
	case transcript.EntryThinkingLevel:
		v = e.ThinkingLevel
	case transcript.EntryCustom:
		v = nonNil(e.Custom)
	default:
		// A type this version does not know: keep its original JSON, or the
		// whole entry when it has none, so nothing is lost.
		if len(e.Raw) > 0 {
			if !json.Valid(e.Raw) {
				return r, fmt.Errorf("entry seq %d (%s): raw payload is not valid JSON", e.Seq, e.Type)
			}
			r.Payload = string(e.Raw)
			return r, nil
		}
		v = e
	}
	if v == nil {
		return r, fmt.Errorf("entry seq %d: type %s without its payload", e.Seq, e.Type)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return r, fmt.Errorf("entry seq %d: %w", e.Seq, err)
	}
	// Marshal's result is a fresh slice nobody else holds or writes: the
	// payload can be its bytes instead of a copy of them.
	r.Payload = unsafe.String(unsafe.SliceData(b), len(b))
	return r, nil
}

// nonNil returns p as an any, or an untyped nil when p is a nil pointer (a
// typed nil in an interface would not compare equal to nil).
func nonNil[T any](p *T) any {
	if p == nil {
		return nil
	}
	return p
}

// decodeEntry decodes a stored entry. payload is the decoder's own copy,
// which nothing writes again: a message's strings share its memory, and what
// must be built comes from a (see msgjson.Arena); m, when not nil, is where
// the message goes.
func decodeEntry(seq int64, typ string, ts int64, payload []byte, a *msgjson.Arena, m *llm.Message) (transcript.Entry, error) {
	e := transcript.Entry{Seq: seq, Type: transcript.EntryType(typ), Timestamp: ts}
	var err error
	switch e.Type {
	case transcript.EntryMessage:
		// Messages are nearly every entry and nearly all of a load's time:
		// msgjson decodes them in one pass, with encoding/json's result.
		if m == nil {
			m = new(llm.Message)
		}
		*m, err = msgjson.UnmarshalMessageShared(payload, a)
		e.Message = m
	case transcript.EntryCompaction:
		e.Compaction = new(transcript.Compaction)
		err = json.Unmarshal(payload, e.Compaction)
	case transcript.EntryModelChange:
		e.ModelChange = new(transcript.ModelChange)
		err = json.Unmarshal(payload, e.ModelChange)
	case transcript.EntryThinkingLevel:
		e.ThinkingLevel, err = unmarshalString(payload)
	case transcript.EntryCustom:
		e.Custom = new(transcript.Custom)
		err = json.Unmarshal(payload, e.Custom)
	default:
		e.Raw = append(json.RawMessage(nil), payload...)
	}
	if err != nil {
		return e, fmt.Errorf("entry seq %d (%s): %w", seq, typ, errors.Join(storage.ErrCorrupt, err))
	}
	return e, nil
}

// rawEntry is a stored entry not yet decoded.
type rawEntry struct {
	seq     int64
	typ     string
	ts      int64
	payload []byte
}

// Decoder decodes stored entries in the order they are added. Small results
// are decoded inline; once a result passes one chunk, full chunks go to
// GOMAXPROCS workers while the caller keeps reading rows. Call Result (or
// Abort, on a read error) exactly once.
type Decoder struct {
	cur    *decodeChunk
	chunks []*decodeChunk
	bytes  int
	work   chan *decodeChunk
	wg     sync.WaitGroup
}

type decodeChunk struct {
	raw []rawEntry
	out []transcript.Entry
	err error
}

// Chunk limits: large enough to amortise the hand-off, small enough to spread
// a 5,000-entry session over the workers early.
const (
	chunkEntries = 128
	chunkBytes   = 256 << 10
)

func (c *decodeChunk) decode() {
	c.out = make([]transcript.Entry, len(c.raw))
	msgs := make([]llm.Message, len(c.raw)) // one allocation for the chunk's messages
	var a msgjson.Arena
	for i, r := range c.raw {
		e, err := decodeEntry(r.seq, r.typ, r.ts, r.payload, &a, &msgs[i])
		if err != nil && c.err == nil {
			c.err = err
		}
		c.out[i] = e
	}
	c.raw = nil
}

// Add queues one stored entry. payload becomes the decoder's: nothing may
// write it again, since the decoded message's strings share its memory.
func (d *Decoder) Add(seq int64, typ string, ts int64, payload []byte) {
	r := rawEntry{seq: seq, typ: typ, ts: ts, payload: payload}
	if d.cur == nil {
		d.cur = &decodeChunk{raw: make([]rawEntry, 0, chunkEntries)}
		d.chunks = append(d.chunks, d.cur)
		d.bytes = 0
	}
	d.cur.raw = append(d.cur.raw, r)
	d.bytes += len(r.payload)
	if len(d.cur.raw) < chunkEntries && d.bytes < chunkBytes {
		return
	}
	if d.work == nil {
		n := runtime.GOMAXPROCS(0)
		d.work = make(chan *decodeChunk, n)
		for range n {
			d.wg.Go(func() {
				for c := range d.work {
					c.decode()
				}
			})
		}
	}
	d.work <- d.cur
	d.cur = nil
}

// Abort stops the workers once they have decoded what they were given,
// without a result.
func (d *Decoder) Abort() {
	if d.work != nil {
		close(d.work)
		d.wg.Wait()
		d.work = nil
	}
}

// Result decodes what is left and returns every entry in order. A payload
// that does not decode is storage.ErrCorrupt.
func (d *Decoder) Result() ([]transcript.Entry, error) {
	if d.cur != nil {
		d.cur.decode()
	}
	d.Abort()
	n := 0
	for _, c := range d.chunks {
		if c.err != nil {
			return nil, c.err
		}
		n += len(c.out)
	}
	if n == 0 {
		return nil, nil
	}
	if len(d.chunks) == 1 {
		return d.chunks[0].out, nil
	}
	out := make([]transcript.Entry, 0, n)
	for _, c := range d.chunks {
		out = append(out, c.out...)
	}
	return out, nil
}

// unmarshalString decodes a JSON string (its own variable: taking the address
// of a field of decodeEntry's entry would move every entry to the heap).
func unmarshalString(payload []byte) (string, error) {
	var s string
	err := json.Unmarshal(payload, &s)
	return s, err
}

// inputOf returns the inbound id of the chat input a user message came from
// (llm.Message.InputID, the decimal id the bridge gave it), 0 for none.
func inputOf(e transcript.Entry) int64 {
	if e.Type != transcript.EntryMessage || e.Message == nil || e.Message.Role != llm.RoleUser || e.Message.InputID == "" {
		return 0
	}
	id, err := strconv.ParseInt(e.Message.InputID, 10, 64)
	if err != nil || id <= 0 {
		return 0
	}
	return id
}
