// Package msgjson decodes the JSON of conversation messages in the form
// threadsmith stores them (llm.Message's own JSON), for storage's loaders:
// resuming a thread is mostly decoding its messages. It does in one pass what
// encoding/json does with reflection, a separate validation pass and nested
// RawMessage passes, and shares the input's memory for strings without
// escapes (BenchmarkDecodeSession measures it against encoding/json).
//
// Contract: the result is always the one encoding/json gives, and its text
// and thinking blocks also carry their UTF-16 lengths (llm.Content's
// TextUnits), which the pass over each string learns: an ASCII string's is
// its length, and the UTF-8 check of any other counts it. The decoders
// handle, in one pass, the JSON these messages are made of; anything else
// (null where a value is expected, a repeated key, a key differing only in
// case from a known one, escapes in keys, invalid UTF-8, a lone surrogate,
// a number that is not a plain integer, a syntax error) is handed to
// encoding/json whole. The differential tests compare both on the pi fixture
// in storage's form, edge cases, random escapes and fuzzed input.
package msgjson

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// UnmarshalMessage decodes data, the JSON of an llm.Message, into a fresh
// message: the same result, error included, as json.Unmarshal(data, &m) into
// a zero llm.Message.
func UnmarshalMessage(data []byte) (llm.Message, error) {
	a := Arena{exact: len(data)}
	return unmarshalMessage(data, false, &a)
}

// UnmarshalMessageShared is UnmarshalMessage for data that nobody modifies
// afterwards (a copy the caller made and keeps to itself): the message's
// strings and raw JSON values share data's memory instead of copying it, and
// what must be built (strings with escapes, content slices) comes from a,
// which may serve many calls, one at a time. Decoding a session is then a
// few allocations instead of one per string.
func UnmarshalMessageShared(data []byte, a *Arena) (llm.Message, error) {
	return unmarshalMessage(data, true, a)
}

func unmarshalMessage(data []byte, shared bool, a *Arena) (llm.Message, error) {
	r := reader{data: data, shared: shared, arena: a}
	var m llm.Message
	if decodeMessage(&r, &m) && r.end() {
		return m, nil
	}
	return unmarshalSlow(data)
}

// unmarshalSlow is encoding/json's verdict on data (a function of its own
// so that the fast path's message stays on the stack).
func unmarshalSlow(data []byte) (llm.Message, error) {
	var m llm.Message
	err := json.Unmarshal(data, &m)
	return m, err
}

// The keys of the Go types, from their json tags: a field added to one of
// them is never silently dropped by the fast path, whose switches fail (and
// so hand the input to encoding/json) on a key they do not handle.
// TestFastPathHandlesEveryField names such a field.
var (
	messageKeys = jsonKeys(reflect.TypeFor[llm.Message]())
	contentKeys = jsonKeys(reflect.TypeFor[llm.Content]())
	usageKeys   = jsonKeys(reflect.TypeFor[llm.Usage]())
	costKeys    = jsonKeys(reflect.TypeFor[llm.Cost]())
)

// jsonKeys lists the JSON names of t's fields as encoding/json sees them.
func jsonKeys(t reflect.Type) []string {
	var keys []string
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case name == "-" && tag == "-":
			continue
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			keys = append(keys, jsonKeys(f.Type)...)
			continue
		case !f.IsExported():
			continue
		case name == "":
			name = f.Name
		}
		keys = append(keys, name)
	}
	if len(keys) > 64 {
		panic("msgjson: more than 64 keys in " + t.String())
	}
	return keys
}

// keySet is a list of keys with an index by length and first byte: a key
// is then found with one comparison instead of one per key before it (whose
// outcomes, key after key, the processor could not predict).
type keySet struct {
	keys []string
	// by[len][first byte] is 1 + the index of the only key of that length
	// and first byte, 0 when there is none, -1 when there are several.
	by [32][128]int8
	// skip are the skippedKeys that match no key, even without regard to
	// case.
	skip []string
}

// skippedKeys are keys pi writes that llm.Message's types do not have
// (encoding/json skips them); newKeySet keeps those that match none of a
// set's keys, even without regard to case, so that they are skipped without
// the case-insensitive comparisons with every key.
var skippedKeys = []string{"api", "thinkingSignature", "textSignature", "partialJson", "responseId", "redacted", "inputId"}

func newKeySet(keys []string) *keySet {
	s := &keySet{keys: keys}
	for _, k := range skippedKeys {
		folds := false
		for _, name := range keys {
			folds = folds || strings.EqualFold(k, name)
		}
		if !folds {
			s.skip = append(s.skip, k)
		}
	}
	for i, k := range keys {
		if len(k) == 0 || len(k) >= len(s.by) || k[0] >= 128 {
			continue // found by the list
		}
		p := &s.by[len(k)][k[0]]
		if *p == 0 {
			*p = int8(i + 1)
		} else {
			*p = -1
		}
	}
	return s
}

var (
	messageSet = newKeySet(messageKeys)
	contentSet = newKeySet(contentKeys)
	usageSet   = newKeySet(usageKeys)
	costSet    = newKeySet(costKeys)
)

// keyIndex returns the index of k in keys, -1 for a key to skip (unknown to
// the Go type, so encoding/json ignores it too), or fails the reader for a
// key encoding/json might match case-insensitively.
func keyIndex(r *reader, k []byte, set *keySet) int {
	if len(k) > 0 && len(k) < len(set.by) && k[0] < 128 {
		if i := set.by[len(k)][k[0]]; i > 0 && set.keys[i-1] == string(k) {
			return int(i - 1)
		}
	}
	for _, name := range set.skip {
		if string(k) == name {
			return -1
		}
	}
	keys := set.keys
	for i, name := range keys {
		if string(k) == name {
			return i
		}
	}
	for _, c := range k {
		if c >= utf8.RuneSelf {
			r.bad() // Unicode case folding: leave it to encoding/json
			return -1
		}
	}
	for _, name := range keys {
		if bytes.EqualFold(k, []byte(name)) {
			r.bad()
			return -1
		}
	}
	return -1
}

// field reads the next key of an object whose Go type has keys and returns
// its name; "" when the key is one to skip (its value is skipped too) or the
// reader failed, which ends the caller's loop. seen holds the keys read so far:
// a repeated key fails the reader (encoding/json merges it into the first value).
func (r *reader) field(set *keySet, seen *uint64) string {
	i := keyIndex(r, r.key(), set)
	if i < 0 {
		r.raw()
		return ""
	}
	if *seen&(1<<i) != 0 {
		r.bad()
		return ""
	}
	*seen |= 1 << i
	return set.keys[i]
}

// decodeMessage reads a message object into m. It reports whether the fast
// path decided.
func decodeMessage(r *reader, m *llm.Message) bool {
	if !r.open('{') {
		return false
	}
	keys := messageSet
	var seen uint64
	for first := true; r.more('}', &first); {
		name := r.field(keys, &seen)
		if name == "" {
			continue
		}
		if r.null() {
			// null leaves a value as it was (zero) and sets pointers and
			// slices to nil, except a RawMessage, which keeps "null".
			if name == "details" {
				m.Details = json.RawMessage("null")
			}
			continue
		}
		switch name {
		case "role":
			m.Role = llm.Role(r.internedStr())
		case "content":
			m.Content = decodeContent(r)
		case "timestamp":
			m.Timestamp = r.int()
		case "provider":
			m.Provider = r.internedStr()
		case "model":
			m.Model = r.internedStr()
		case "usage":
			m.Usage = decodeUsage(r)
		case "stopReason":
			m.StopReason = llm.StopReason(r.internedStr())
		case "errorMessage":
			m.ErrorMessage = r.str()
		case "errorInfo":
			// Into variables of their own, here and for bash: the address
			// of m's field would move every message to the heap.
			raw := r.raw()
			var e *llm.Error
			if !r.fail && json.Unmarshal(raw, &e) != nil {
				r.bad()
			}
			m.ErrorInfo = e
		case "toolCallId":
			m.ToolCallID = r.str()
		case "toolName":
			m.ToolName = r.internedStr()
		case "isError":
			m.IsError = r.boolean()
		case "details":
			m.Details = r.keepRaw(r.raw())
		case "customType":
			m.CustomType = r.str()
		case "display":
			m.Display = r.boolean()
		case "summary":
			m.Summary = r.str()
		case "tokensBefore":
			m.TokensBefore = int(r.int())
		case "bash":
			raw := r.raw()
			var b *llm.BashExecution
			if !r.fail && json.Unmarshal(raw, &b) != nil {
				r.bad()
			}
			m.Bash = b
		case "inputId":
			m.InputID = r.str()
		default:
			r.bad() // a field this fast path does not know yet
		}
	}
	return !r.fail
}

func decodeContent(r *reader) []llm.Content {
	if !r.open('[') {
		return nil
	}
	var buf [4]llm.Content
	out := buf[:0]
	for first := true; r.more(']', &first); {
		if r.peek() != '{' {
			r.bad() // null or a non-object element
			return nil
		}
		r.pos++
		var c llm.Content
		var seen uint64
		for first := true; r.more('}', &first); {
			name := r.field(contentSet, &seen)
			if name == "" {
				continue
			}
			if r.null() {
				if name == "arguments" {
					c.Arguments = json.RawMessage("null")
				}
				continue
			}
			switch name {
			case "type":
				c.Type = llm.ContentType(r.internedStr())
			case "text":
				c.Text = r.str()
				c.SetTextUnits(r.units)
			case "thinking":
				c.Thinking = r.str()
				c.SetThinkingUnits(r.units)
			case "signature":
				c.Signature = r.str()
			case "mimeType":
				c.MimeType = r.internedStr()
			case "data":
				c.Data = r.str()
			case "id":
				c.ID = r.str()
			case "name":
				c.Name = r.internedStr()
			case "arguments":
				c.Arguments = r.keepRaw(r.raw())
			case "rawArguments":
				c.RawArguments = r.str()
			default:
				r.bad()
			}
		}
		out = append(out, c)
	}
	if r.fail {
		return nil
	}
	return r.arena.blocks(out)
}

func decodeUsage(r *reader) *llm.Usage {
	if !r.open('{') {
		return nil
	}
	u := r.arena.usage()
	var seen uint64
	for first := true; r.more('}', &first); {
		name := r.field(usageSet, &seen)
		if name == "" {
			continue
		}
		if r.null() {
			if name == "cost" {
				u.Cost = nil
			}
			continue
		}
		switch name {
		case "input":
			u.Input = int(r.int())
		case "output":
			u.Output = int(r.int())
		case "cacheRead":
			u.CacheRead = int(r.int())
		case "cacheWrite":
			u.CacheWrite = int(r.int())
		case "totalTokens":
			u.TotalTokens = int(r.int())
		case "cost":
			u.Cost = decodeCost(r)
		default:
			r.bad()
		}
	}
	return u
}

func decodeCost(r *reader) *llm.Cost {
	if !r.open('{') {
		return nil
	}
	c := r.arena.cost()
	var seen uint64
	for first := true; r.more('}', &first); {
		name := r.field(costSet, &seen)
		if name == "" {
			continue
		}
		if r.null() {
			continue
		}
		switch name {
		case "input":
			c.Input = r.float()
		case "output":
			c.Output = r.float()
		case "cacheRead":
			c.CacheRead = r.float()
		case "cacheWrite":
			c.CacheWrite = r.float()
		case "total":
			c.Total = r.float()
		default:
			r.bad()
		}
	}
	return c
}

// internedStr reads a string that is usually one of a few values (roles,
// block types, stop reasons, providers, tool names) without allocating for
// those.
func (r *reader) internedStr() string {
	raw, esc := r.scanString(true)
	if r.fail {
		return ""
	}
	if esc {
		r.pos = r.strStart - 1 // read it again, unescaping
		return r.str()
	}
	if s := internedValue(raw); s != "" {
		return s
	}
	return r.keep(raw)
}

// internedValue returns the constant for raw when it is one of the few
// values of roles, block types, stop reasons, providers, mime types and tool
// names, else "" (a switch: the compiler compares lengths and then a few of
// the values, cheaper than hashing raw for a map).
func internedValue(raw []byte) string {
	switch string(raw) {
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	case "toolResult":
		return "toolResult"
	case "custom":
		return "custom"
	case "compactionSummary":
		return "compactionSummary"
	case "bashExecution":
		return "bashExecution"
	case "text":
		return "text"
	case "thinking":
		return "thinking"
	case "image":
		return "image"
	case "toolCall":
		return "toolCall"
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "toolUse":
		return "toolUse"
	case "error":
		return "error"
	case "aborted":
		return "aborted"
	case "openai":
		return "openai"
	case "anthropic":
		return "anthropic"
	case "google":
		return "google"
	case "image/png":
		return "image/png"
	case "image/jpeg":
		return "image/jpeg"
	case "read":
		return "read"
	case "write":
		return "write"
	case "edit":
		return "edit"
	case "bash":
		return "bash"
	case "grep":
		return "grep"
	case "find":
		return "find"
	case "ls":
		return "ls"
	}
	return ""
}

// Arena hands out the memory of decoded strings and content slices in large
// chunks: a session's tens of thousands of strings become a few allocations,
// and the collector has a few objects to look at instead of each string.
// What it hands out is never written again (a string's bytes must not
// change), and a slice it hands out has no capacity beyond its length, so an
// append copies it. The zero Arena is ready for use; it is not safe for
// concurrent use.
type Arena struct {
	buf      []byte        // the current chunk of bytes; len is what was handed out
	contents []llm.Content // the current chunk of content blocks, likewise
	inChunk  bool          // what reserve returned is at the end of buf
	// Slabs of the small objects a message points to, handed out one by
	// one (not for exact arenas, which serve one message).
	usages []llm.Usage
	costs  []llm.Cost
	strs   []string
	// exact, when not 0, is the size of the only chunk of bytes needed: the
	// decoded input's length, which bounds what is taken from it (the
	// non-shared decoders, one arena per message).
	exact int
}

// Chunk sizes: a byte chunk holds many typical strings; anything larger than
// a quarter of it gets its own allocation so that little is wasted.
const (
	arenaBytes  = 64 << 10
	arenaBlocks = 256
)

// reserve returns room for up to n bytes at the end of the current chunk;
// commit then hands out the first k of them.
func (a *Arena) reserve(n int) []byte {
	if cap(a.buf)-len(a.buf) < n {
		if a.exact == 0 && n > arenaBytes/4 {
			a.inChunk = false
			return makeNoZero(n)
		}
		a.buf = makeNoZero(max(a.chunkSize(), n))[:0]
	}
	a.inChunk = true
	return a.buf[len(a.buf) : len(a.buf)+n]
}

// space returns the free end of the current chunk for a text of unknown
// length, at least n bytes (a new chunk when the current one has less);
// grow enlarges it, commit hands out its beginning.
func (a *Arena) space(n int) []byte {
	free := cap(a.buf) - len(a.buf)
	if free < n || (a.exact == 0 && free < arenaBytes/16) {
		if a.exact == 0 && n > arenaBytes/4 {
			a.inChunk = false
			return makeNoZero(n)
		}
		a.buf = makeNoZero(max(a.chunkSize(), n))[:0]
	}
	a.inChunk = true
	return a.buf[len(a.buf):cap(a.buf)]
}

// chunkSize is the size of a new chunk of bytes.
func (a *Arena) chunkSize() int {
	if a.exact > 0 {
		return a.exact + 8 // the slack space's callers need past the text
	}
	return arenaBytes
}

// grow returns a larger dst holding its first n bytes, as large as limit
// at most (more when dst already is).
func (a *Arena) grow(dst []byte, n, limit int) []byte {
	size := min(max(2*len(dst), n+256), limit)
	size = max(size, n+8)
	b := makeNoZero(size)
	copy(b, dst[:n])
	a.inChunk = false
	return b
}

// commit hands out the first k bytes of what reserve returned (b).
func (a *Arena) commit(b []byte, k int) string {
	if a.inChunk {
		a.buf = a.buf[:len(a.buf)+k]
		a.inChunk = false
	}
	if k == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), k)
}

// bytes copies b into the arena.
func (a *Arena) bytes(b []byte) []byte {
	dst := a.reserve(len(b))
	copy(dst, b)
	s := a.commit(dst, len(b))
	return unsafe.Slice(unsafe.StringData(s), len(b))[:len(b):len(b)]
}

// blocks copies content blocks into the arena (encoding/json makes [] an
// empty, non-nil slice, and so does blocks).
func (a *Arena) blocks(bs []llm.Content) []llm.Content {
	n := len(bs)
	if n == 0 {
		return []llm.Content{}
	}
	if a.exact > 0 || n > arenaBlocks/4 {
		return append(make([]llm.Content, 0, n), bs...)
	}
	if cap(a.contents)-len(a.contents) < n {
		a.contents = make([]llm.Content, 0, arenaBlocks)
	}
	start := len(a.contents)
	a.contents = append(a.contents, bs...)
	return a.contents[start:len(a.contents):len(a.contents)]
}

// arenaSmall is the number of small objects of a kind in a slab.
const arenaSmall = 128

func (a *Arena) usage() *llm.Usage { return take(a, &a.usages) }

func (a *Arena) cost() *llm.Cost { return take(a, &a.costs) }

// str returns a pointer to a copy of s.
func (a *Arena) str(s string) *string {
	p := take(a, &a.strs)
	*p = s
	return p
}

// take hands out the next zero T of a's slab (a new one for an exact arena).
func take[T any](a *Arena, slab *[]T) *T {
	if a.exact > 0 {
		return new(T)
	}
	if len(*slab) == 0 {
		*slab = make([]T, arenaSmall)
	}
	p := &(*slab)[0]
	*slab = (*slab)[1:]
	return p
}

// makeNoZero returns a byte slice of length and capacity n whose bytes are
// not cleared first: whatever the memory held, for a caller that writes every
// byte before reading it (the arena's chunks). (strings.Builder allocates without clearing;
// its one-byte string gives the allocation's address.)
func makeNoZero(n int) []byte {
	if n == 0 {
		return []byte{}
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteByte(0)
	return unsafe.Slice(unsafe.StringData(b.String()), n)
}
