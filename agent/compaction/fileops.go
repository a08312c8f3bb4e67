package compaction

import (
	"bytes"
	"encoding/json"
	"slices"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/threadsmith/threadsmith/agent/llm"
)

// Tool names and the argument that names the file, as pi's tools (and ours) call them.
const (
	toolRead  = "read"
	toolWrite = "write"
	toolEdit  = "edit"
	pathArg   = "path"
)

// fileOps collects the files a conversation touched.
type fileOps struct {
	read, written, edited map[string]struct{}
}

func newFileOps() *fileOps {
	return &fileOps{read: map[string]struct{}{}, written: map[string]struct{}{}, edited: map[string]struct{}{}}
}

// addPrevious merges a previous compaction's lists: its modified files count as edited.
func (f *fileOps) addPrevious(read, modified []string) {
	for _, p := range read {
		f.read[p] = struct{}{}
	}
	for _, p := range modified {
		f.edited[p] = struct{}{}
	}
}

// addMessage records the read, write and edit tool calls of an assistant message.
func (f *fileOps) addMessage(m *llm.Message) {
	if m.Role != llm.RoleAssistant {
		return
	}
	for i := range m.Content {
		c := &m.Content[i]
		if c.Type != llm.ContentToolCall {
			continue
		}
		var set map[string]struct{}
		switch c.Name {
		case toolRead:
			set = f.read
		case toolWrite:
			set = f.written
		case toolEdit:
			set = f.edited
		default:
			continue
		}
		// Most calls name a file already in the set: look it up from the
		// argument's bytes, so that only a new path costs a string.
		if raw, ok := plainStringField(c.Arguments, pathArg); ok {
			if _, seen := set[string(raw)]; !seen && len(raw) > 0 {
				set[string(raw)] = struct{}{}
			}
		} else if p, ok := stringField(c.Arguments, pathArg); ok && p != "" {
			set[p] = struct{}{}
		}
	}
}

// lists returns the read-only files and the modified files, each sorted as
// JavaScript sorts strings (by UTF-16 code units). A file both read and modified is
// only listed as modified.
func (f *fileOps) lists() (readFiles, modifiedFiles []string) {
	for p := range f.edited {
		modifiedFiles = append(modifiedFiles, p)
	}
	for p := range f.written {
		if _, dup := f.edited[p]; !dup {
			modifiedFiles = append(modifiedFiles, p)
		}
	}
	for p := range f.read {
		_, e := f.edited[p]
		_, w := f.written[p]
		if !e && !w {
			readFiles = append(readFiles, p)
		}
	}
	slices.SortFunc(readFiles, compareUTF16)
	slices.SortFunc(modifiedFiles, compareUTF16)
	return readFiles, modifiedFiles
}

// compareUTF16 orders strings by UTF-16 code units, like Array#sort. It differs
// from byte order only for characters above U+FFFF against U+E000–U+FFFF.
func compareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			if d := cmpUnit(ra) - cmpUnit(rb); d != 0 {
				return d
			}
			return int(ra - rb) // both above U+FFFF with the same high surrogate
		}
		a, b = a[na:], b[nb:]
	}
	return len(a) - len(b)
}

// cmpUnit is the first UTF-16 code unit of r.
func cmpUnit(r rune) int {
	if r >= 0x10000 {
		hi, _ := utf16.EncodeRune(r)
		return int(hi)
	}
	return int(r)
}

// stringField returns the string value of a top-level member of a JSON object (the
// last one, if repeated, as JSON.parse keeps). It skips other values without decoding
// them: a write call's content can be large and only the path matters here.
func stringField(raw []byte, name string) (string, bool) {
	val, found := fieldValue(raw, name)
	if !found || len(val) < 2 || val[0] != '"' {
		return "", false
	}
	if inner := val[1 : len(val)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner), true
	}
	var out string
	if json.Unmarshal(val, &out) != nil {
		return "", false
	}
	return out, true
}

// plainStringField is stringField for a value without escapes, as its bytes;
// ok is false when the value needs stringField (escapes, invalid UTF-8) or
// is not a string.
func plainStringField(raw []byte, name string) ([]byte, bool) {
	val, found := fieldValue(raw, name)
	if !found || len(val) < 2 || val[0] != '"' {
		return nil, false
	}
	inner := val[1 : len(val)-1]
	return inner, bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner)
}

// fieldValue returns the raw value of the last top-level member name of the
// JSON object raw.
func fieldValue(raw []byte, name string) ([]byte, bool) {
	s := skipWS(raw, 0)
	if s >= len(raw) || raw[s] != '{' {
		return nil, false
	}
	var (
		val   []byte
		found bool
	)
	i := skipWS(raw, s+1)
	for i < len(raw) && raw[i] == '"' {
		kEnd := skipString(raw, i)
		if kEnd < 0 {
			return nil, false
		}
		key := raw[i+1 : kEnd-1]
		i = skipWS(raw, kEnd)
		if i >= len(raw) || raw[i] != ':' {
			return nil, false
		}
		i = skipWS(raw, i+1)
		vEnd := skipValue(raw, i)
		if vEnd < 0 {
			return nil, false
		}
		if keyEquals(key, name) {
			val, found = raw[i:vEnd], true
		}
		i = skipWS(raw, vEnd)
		if i < len(raw) && raw[i] == ',' {
			i = skipWS(raw, i+1)
		}
	}
	return val, found
}

func keyEquals(rawKey []byte, name string) bool {
	if bytes.IndexByte(rawKey, '\\') < 0 {
		return string(rawKey) == name
	}
	var k string
	return json.Unmarshal(append(append([]byte{'"'}, rawKey...), '"'), &k) == nil && k == name
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"', or -1.
// It jumps from quote to quote; a quote preceded by an odd run of backslashes is
// escaped.
func skipString(b []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		q := i + j
		n := 0
		for k := q - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		i = q + 1
	}
}

// skipValue returns the index just past the JSON value starting at b[i], or -1.
// It checks only what it needs to find the end.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				if i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	default:
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' &&
			b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
			i++
		}
		return i
	}
}
