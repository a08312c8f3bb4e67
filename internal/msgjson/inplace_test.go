package msgjson

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// checkInPlace compares DecodePiMessageLineInPlace with DecodePiMessageLine
// on line: the same verdict and result, and for a line it refuses, a line
// for the slow path that is the same JSON, in line's memory.
func checkInPlace(t *testing.T, line []byte) {
	t.Helper()
	want, wantOK := DecodePiMessageLine(line)
	buf := bytes.Clone(line)
	a := new(Arena)
	got, ok, slow := DecodePiMessageLineInPlace(buf, a)
	if ok != wantOK || (ok && !reflect.DeepEqual(got, want)) {
		t.Fatalf("%q: in place = %v, %#v; DecodePiMessageLine = %v, %#v", line, ok, got, wantOK, want)
	}
	if !ok {
		checkSlowLine(t, line, buf, slow)
	}
}

// checkSlowLine checks that slow, what DecodePiMessageLineInPlace gave for
// the slow path after refusing line (decoded in buf), lies at the start of
// buf and is the same JSON as line: valid or not alike, and the same value.
func checkSlowLine(t *testing.T, line, buf, slow []byte) {
	t.Helper()
	if len(slow) == 0 && len(line) > 0 || len(slow) > 0 && unsafe.SliceData(slow) != unsafe.SliceData(buf) {
		t.Fatalf("%q: refused, the line for the slow path is not at the start of the line's memory", line)
	}
	if json.Valid(slow) != json.Valid(line) {
		t.Fatalf("%q: refused, and the line for the slow path %q is valid JSON: %v", line, slow, json.Valid(slow))
	}
	if !json.Valid(line) {
		return
	}
	value := func(b []byte) any {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber() // as they are written: any size
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	a, b := value(line), value(slow)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%q: refused, and the line for the slow path %q holds another value", line, slow)
	}
}

// randomJSONText returns the inside of a JSON string: plain runs of random
// lengths, every escape JSON has (surrogate pairs, lone halves, bad ones),
// non-ASCII text, and now and then invalid UTF-8, a control byte or a quote
// cut short — at every offset from an eight-byte word's start.
func randomJSONText(r *rand.Rand) string {
	var b strings.Builder
	pieces := []string{`\n`, `\"`, `\\`, `\/`, `\t`, `\r`, `\b`, `\f`, `\u0000`, `\u001f`, `\u00e9`, `\u0041`, `\ud83d\ude00`, `é`, `日本`, `\u2028`}
	rare := []string{"\xff", "\x01", "\n", `\ud83d`, `\x`, `\u12`, "\xe6\x97", `\`}
	for range r.IntN(12) {
		b.WriteString(strings.Repeat("abcdefghij"[:1+r.IntN(10)], r.IntN(4)))
		switch k := r.IntN(100); {
		case k < 85:
			b.WriteString(pieces[r.IntN(len(pieces))])
		case k < 90:
			b.WriteString(rare[r.IntN(len(rare))])
		default:
			b.WriteString(strings.Repeat("x", r.IntN(40)))
		}
	}
	return b.String()
}

// TestInPlaceMatchesCopying decodes random lines whose strings have escapes
// in place and by copying, and with encoding/json (checkPi): a string that
// fails after earlier ones were unescaped leaves the whole line restored.
func TestInPlaceMatchesCopying(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 4))
	for range 20000 {
		text, other := randomJSONText(r), randomJSONText(r)
		msg := `{"role":"user","content":[{"type":"text","text":"` + text + `"},{"type":"thinking","thinking":"` + other + `"}],"errorMessage":"` + other + `"}`
		switch r.IntN(4) {
		case 0: // a repeated key after the strings: refused at the end
			msg = strings.TrimSuffix(msg, "}") + `,"role":"user"}`
		case 1: // content as pi's plain string
			msg = `{"role":"user","content":"` + text + `"}`
		}
		checkPi(t, []byte(msg))
		line := []byte(`{"id":"` + other + `","message":` + msg + `,"type":"message"}`)
		checkInPlace(t, line)
		// The type after the message, and not a message: refused last.
		checkInPlace(t, []byte(`{"message":`+msg+`,"type":"custom"}`))
	}
}

// TestInPlaceFixture decodes every line of the fixture in place with one
// arena, as LoadPiSession does, and compares with DecodePiMessageLine.
func TestInPlaceFixture(t *testing.T) {
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	var a Arena
	n := 0
	for line := range bytes.Lines(data) {
		line = bytes.TrimSpace(line)
		want, wantOK := DecodePiMessageLine(line)
		buf := bytes.Clone(line)
		got, ok, slow := DecodePiMessageLineInPlace(buf, &a)
		if ok != wantOK || (ok && !reflect.DeepEqual(got, want)) {
			t.Fatalf("%q: in place %v, want %v", line, ok, wantOK)
		}
		if !ok {
			checkSlowLine(t, line, buf, slow)
		}
		if ok {
			n++
		}
	}
	if n < 900 {
		t.Fatalf("only %d lines decoded", n)
	}
}

func FuzzInPlace(f *testing.F) {
	for _, c := range edgeCases {
		f.Add([]byte(`{"type":"message","message":` + c + `}`))
	}
	f.Add([]byte(`{"type":"message","message":{"role":"user","content":"a\n\"b\u00e9"}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		checkInPlace(t, line)
	})
}

// BenchmarkInPlaceCode decodes in place lines whose text is code and tool
// output with an escape every ~24 bytes, as in the generated sessions.
func BenchmarkInPlaceCode(b *testing.B) {
	unit := `\t\thttp.Error(w, \"bad request: \"+err.Error(), http.StatusBadRequest)\n--- PASS: TestHandle (0.00s)\n\tif err := json.NewDecoder(r.Body).Decode(\u0026req); err != nil {\n\tfor i, item := range items {\n\t\treturn\nok  \tgithub.com/acme/app/server\t0.412s\n`
	unit = strings.ReplaceAll(unit, `\u0026`, `&`)
	text := strings.Repeat(unit, 40)
	line := []byte(`{"id":"e2","message":{"role":"toolResult","content":[{"type":"text","text":"` + text + `"}],"timestamp":1750000006649,"toolCallId":"call_1","toolName":"read","isError":false},"parentId":"e1","timestamp":"2025-06-15T15:06:46.649Z","type":"message"}`)
	buf := make([]byte, len(line))
	var a Arena
	b.SetBytes(int64(len(line)))
	for b.Loop() {
		copy(buf, line)
		if _, ok, _ := DecodePiMessageLineInPlace(buf, &a); !ok {
			b.Fatal("refused")
		}
	}
}

// keyIndex finds every key of each set through its index, skips keys the
// types do not have, and refuses a key that matches one only without
// regard to case (encoding/json would take it for that field).
func TestKeySets(t *testing.T) {
	for _, set := range []*keySet{messageSet, contentSet, usageSet, costSet, piSet} {
		for i, k := range set.keys {
			r := reader{}
			if got := keyIndex(&r, []byte(k), set); got != i || r.fail {
				t.Errorf("keyIndex(%q) = %d (fail %v), want %d", k, got, r.fail, i)
			}
			r = reader{}
			if keyIndex(&r, []byte(strings.ToUpper(k)), set); !r.fail {
				t.Errorf("keyIndex(%q) did not refuse a case variant", strings.ToUpper(k))
			}
		}
		for _, k := range append(skippedKeys, "API", "unknownKey", "x") {
			if slices.Contains(set.keys, k) {
				continue // a key of this set (inputId of llm.Message)
			}
			r := reader{}
			folds := false
			for _, name := range set.keys {
				folds = folds || strings.EqualFold(k, name)
			}
			if got := keyIndex(&r, []byte(k), set); got != -1 || r.fail != folds {
				t.Errorf("keyIndex(%q) = %d (fail %v), want -1 (fail %v)", k, got, r.fail, folds)
			}
		}
	}
}

func TestInternedValue(t *testing.T) {
	for _, v := range []string{"user", "assistant", "toolResult", "text", "toolCall", "stop", "anthropic", "image/png", "read", "ls"} {
		if got := internedValue([]byte(v)); got != v {
			t.Errorf("internedValue(%q) = %q", v, got)
		}
	}
	for _, v := range []string{"", "User", "users", "x", "image/gif"} {
		if got := internedValue([]byte(v)); got != "" {
			t.Errorf("internedValue(%q) = %q, want none", v, got)
		}
	}
}

// Long texts with escapes, in place and copying: random runs of 0 to 100
// plain bytes between escapes (one-letter ones, \u, a bad escape now and
// then, a control byte, invalid UTF-8), escapes and the closing quote at
// every offset of the eight-byte words and near the end of the line;
// strings after them on the same line must be intact.
func TestInPlaceLongTexts(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 7))
	one := []string{`\n`, `\"`, `\\`, `\/`, `\t`, `\r`, `\b`, `\f`}
	text := func() string {
		var b strings.Builder
		for b.Len() < 50+r.IntN(3000) {
			b.WriteString(strings.Repeat("abcdefgh"[:1+r.IntN(8)], r.IntN(14)))
			switch k := r.IntN(1000); {
			case k < 900:
				b.WriteString(one[r.IntN(len(one))])
			case k < 960:
				b.WriteString(`\u00e9é`)
			case k < 990:
				b.WriteString("\xe6\x97\xa5")
			case k < 994:
				b.WriteString("\x01")
			case k < 997:
				b.WriteString("\xff")
			default:
				b.WriteString(`\x`)
			}
		}
		return b.String()
	}
	for range 3000 {
		a, c := text(), text()
		tail := strings.Repeat(" ", r.IntN(200))
		line := []byte(`{"id":"x","message":{"role":"user","content":[{"type":"text","text":"` + a + `"},{"type":"text","text":"` + c + `"}],"errorMessage":"` + c[:len(c)/3] + `"},"type":"message"}` + tail)
		checkInPlace(t, line)
		checkPi(t, []byte(`{"role":"user","content":"`+a+`"}`))
	}
}

// A string with escapes is unescaped over its own bytes in the line: its
// text lies inside the line and the arena gives no bytes for it. What a line
// decoded in place holds stays as it was while the arena decodes other lines
// in place, refused ones (spelled again for the slow path) among them.
func TestInPlaceWritesOverTheLine(t *testing.T) {
	line := func(text string) []byte {
		return []byte(`{"type":"message","id":"e\"1","message":{"role":"user","content":[{"type":"text","text":"` + text + `"}]}}`)
	}
	inside := func(s string, buf []byte) bool {
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		b := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
		return p >= b && p+uintptr(len(s)) <= b+uintptr(len(buf))
	}
	var a Arena
	first := line(`a\tb\n\"c\"\u00e9 ` + strings.Repeat(`x\\y`, 40))
	want, _ := DecodePiMessageLine(first)
	got, ok, _ := DecodePiMessageLineInPlace(first, &a)
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("in place = %v, %#v; want %#v", ok, got, want)
	}
	text := got.Message.Content[0].Text
	if !inside(text, first) || !inside(got.ID, first) {
		t.Errorf("the unescaped strings were copied, not written over the line")
	}
	if len(a.buf) != 0 {
		t.Errorf("the arena gave %d bytes for strings unescaped in place", len(a.buf))
	}
	// Other lines with the same arena: a refused one (a repeated key after
	// its strings were unescaped) and one decoded.
	refused := []byte(strings.TrimSuffix(string(line(`p\nq\/\u00e9`+strings.Repeat(`\"`, 30))), "}") + `,"type":"message"}`)
	orig := bytes.Clone(refused)
	_, ok, slow := DecodePiMessageLineInPlace(refused, &a)
	if ok {
		t.Fatal("a repeated key: decoded")
	}
	checkSlowLine(t, orig, refused, slow)
	if len(slow) >= len(orig) {
		t.Errorf("the refused line was given back as it was, not spelled again: %q", slow)
	}
	if _, ok, _ := DecodePiMessageLineInPlace(line(strings.Repeat(`\u0041\/`, 50)), &a); !ok {
		t.Fatal("refused")
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the first line's message changed after other lines: %#v", got)
	}
}

// key reads a plain key in one step and checks the others as a string:
// invalid UTF-8, an escape or a control character fails the reader.
func TestKey(t *testing.T) {
	const value = `1234567890` // the value after it: the word after the quote is whole
	for in, want := range map[string]string{`"type":`: "type", `"":`: "", `"toolCallIdx1":`: "toolCallIdx1", `"é":`: "é", `"a" :`: "a", `"abcdefghijklmnopq":`: "abcdefghijklmnopq", `"abcdefghijklmno":`: "abcdefghijklmno"} {
		for _, in := range []string{in, in + value} {
			r := reader{data: []byte(in)}
			if k := r.key(); r.fail || string(k) != want {
				t.Errorf("key of %q = %q (failed: %v), want %q", in, k, r.fail, want)
			}
		}
	}
	for _, in := range []string{"\"\xff\":", "\"a\xff\":", `"a\"b":`, "\"a\x01\":", `"abc"`, `"abc",`, "\"toolCallId\xff\":", "\"toolCall\x01\":"} {
		for _, in := range []string{in, in + value} {
			r := reader{data: []byte(in)}
			if k := r.key(); !r.fail {
				t.Errorf("key of %q = %q, want the reader failed", in, k)
			}
		}
	}
}

// key returns exactly the key and moves past its ':' whatever follows:
// keys of every length up to 20, then random bytes full of quotes and
// colons where the one-step read must not look.
func TestKeyEveryLength(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 10))
	const tailBytes = `":a,1 "`
	for n := range 21 {
		for range 200 {
			key := strings.Repeat("k", n)
			tail := make([]byte, 24)
			for i := range tail {
				tail[i] = tailBytes[r.IntN(len(tailBytes))]
			}
			rd := reader{data: append([]byte(`"`+key+`":`), tail...)}
			if k := rd.key(); rd.fail || string(k) != key || rd.pos != n+3 {
				t.Fatalf("key of %q = %q at %d (failed: %v), want %q at %d", rd.data, k, rd.pos, rd.fail, key, n+3)
			}
		}
	}
}
