package msgjson

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/internal/pisessiontest"
	"github.com/threadsmith/threadsmith/internal/sessiongen"
)

const fixture = "../../agent/compaction/testdata/before-compaction.jsonl"

// fixtureMessages returns the "message" objects of pi's fixture session, raw.
func fixtureMessages(t testing.TB) [][]byte {
	t.Helper()
	data, err := os.ReadFile(fixture)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var e struct {
			Type    string
			Message json.RawMessage
		}
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Type == "message" {
			out = append(out, e.Message)
		}
	}
	if len(out) < 900 {
		t.Fatalf("only %d messages in the fixture", len(out))
	}
	return out
}

// checkMessage compares UnmarshalMessage and UnmarshalMessageShared with
// encoding/json on data.
func checkMessage(t *testing.T, data []byte) {
	t.Helper()
	var want llm.Message
	wantErr := json.Unmarshal(data, &want)
	for _, shared := range []bool{false, true} {
		var got llm.Message
		var gotErr error
		if shared {
			got, gotErr = UnmarshalMessageShared(bytes.Clone(data), new(Arena))
		} else {
			got, gotErr = UnmarshalMessage(data)
		}
		if (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("%q (shared %v): error %v, encoding/json says %v", data, shared, gotErr, wantErr)
		}
		if gotErr == nil && !reflect.DeepEqual(got.WithoutUnits(), want) {
			t.Fatalf("%q (shared %v):\n got  %#v\n want %#v", data, shared, got, want)
		}
		checkUnits(t, got)
	}
}

// checkUnits checks the UTF-16 lengths the decoder carried with texts
// (what TextUnits answers) against counting them.
func checkUnits(t testing.TB, m llm.Message) {
	t.Helper()
	for i := range m.Content {
		c := &m.Content[i]
		if got, want := c.TextUnits(), llm.UTF16Len(c.Text); got != want {
			t.Fatalf("content %d: carried text length %d, %q has %d", i, got, c.Text, want)
		}
		if got, want := c.ThinkingUnits(), llm.UTF16Len(c.Thinking); got != want {
			t.Fatalf("content %d: carried thinking length %d, %q has %d", i, got, c.Thinking, want)
		}
	}
}

// storedFixture returns the messages of pi's fixture session in the form
// storage writes them (llm.Message's JSON), read with encoding/json.
func storedFixture(t testing.TB) [][]byte {
	t.Helper()
	f, err := os.Open(fixture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := pisessiontest.Load(f)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]byte
	for _, e := range entries {
		if e.Message == nil {
			continue
		}
		b, err := json.Marshal(e.Message)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	if len(out) < 900 {
		t.Fatalf("only %d messages in the fixture", len(out))
	}
	return out
}

func TestFixtureMessagesMatchEncodingJSON(t *testing.T) {
	for _, stored := range storedFixture(t) {
		checkMessage(t, stored)
	}
	for _, raw := range fixtureMessages(t) {
		checkMessage(t, raw) // pi's form read as a stored message: content strings fail over
	}
}

// edgeCases are inputs where a one-pass decoder could part from
// encoding/json.
var edgeCases = []string{
	`{"role":"user","content":[{"type":"text","text":"a\"b\\c\/d\b\f\n\r\t\u00e9\u003c\ud83d\ude00"}]}`,
	`{"role":"user","content":[{"type":"text","text":"lone \ud83d surrogate"}]}`,
	`{"role":"user","content":[{"type":"text","text":"bad \x"}]}`,
	`{"role":"user","content":[{"type":"text","text":"ctl ` + "\x01" + `"}]}`,
	`{"role":"user","content":[{"type":"text","text":"invalid ` + "\xff\xfe" + ` utf8"}]}`,
	`{"role":"user","role":"assistant"}`,
	// A repeated object or array key: encoding/json merges the second value
	// into the first (usage's output stays 2, the second block keeps its id).
	`{"role":"assistant","usage":{"input":1,"output":2},"usage":{"input":3}}`,
	`{"role":"assistant","usage":{"cost":{"input":1,"total":2},"cost":{"input":3}}}`,
	`{"role":"assistant","content":[{"type":"text","text":"a","type":"toolCall"}]}`,
	`{"role":"assistant","content":[{"type":"text"},{"type":"toolCall","id":"c1"}],"content":[{"type":"text"},{"name":"read"}]}`,
	`{"Role":"user"}`,
	`{"ROLE":"user","content":null}`,
	`{"role":null,"content":null,"usage":null,"details":null,"timestamp":null}`,
	`{"role":"assistant","usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":10,"cost":{"total":0.1}}}`,
	`{"role":"assistant","usage":{"input":1.5}}`,
	`{"role":"assistant","usage":{"input":1e3}}`,
	`{"role":"assistant","usage":{"input":-0}}`,
	`{"role":"assistant","usage":{"input":01}}`,
	`{"role":"assistant","usage":{"input":99999999999999999999}}`,
	`{"role":"assistant","timestamp":-9223372036854775808}`,
	`{"role":"assistant","timestamp":9223372036854775808}`,
	`{"role":"assistant","content":[{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.go","n":[1,2.5e-3,true,null,{"x":"y"}]}}]}`,
	`{"role":"assistant","content":[{"type":"toolCall","arguments":null}]}`,
	`{"role":"assistant","content":[null]}`,
	`{"role":"assistant","content":[]}`,
	`{"role":"assistant","content":[{}]}`,
	`{"role":"assistant","content":[1]}`,
	`{"role":"assistant","content":"text"}`,
	`{"role":"toolResult","isError":true,"details":{"diff":"x"},"display":false}`,
	`{"role":"toolResult","isError":"yes"}`,
	`{"role":"assistant","errorInfo":{"kind":"http","status":429,"code":"rate_limit","message":"slow"},"stopReason":"error"}`,
	`{"role":"bashExecution","bash":{"command":"ls","output":"a\n","exitCode":0}}`,
	`{"role":"bashExecution","command":"ls","output":"a\n","exitCode":0,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/x"}`,
	`{"role":"user","timestamp":"2025-01-01T00:00:00Z"}`,
	`{"role":"user","timestamp":1750000000000.5}`,
	` {"role" : "user" , "content" : [ { "type" : "text" , "text" : "sp" } ] } `,
	`{"role":"user",}`,
	`{"role":"user"} x`,
	`{"role":"user"`,
	`{"role":"user","content":[{"type":"text","text":"a"},]}`,
	`{"ro\u006ce":"user"}`,
	`{"rôle":"user"}`,
	`{"unknown":{"deep":[[[[{"a":null}]]]]},"role":"user"}`,
	`{"role":"user","inputId":"42","customType":"ctx","summary":"s","tokensBefore":12}`,
	`null`,
	`[]`,
	`{}`,
	``,
}

func TestEdgeCasesMatchEncodingJSON(t *testing.T) {
	for _, c := range edgeCases {
		checkMessage(t, []byte(c))
	}
}

func FuzzMessage(f *testing.F) {
	for _, c := range edgeCases {
		f.Add([]byte(c))
	}
	for i, raw := range fixtureMessages(f) {
		if i%50 == 0 {
			f.Add(raw)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkMessage(t, data)
	})
}

// TestFastPathHandlesEveryField fails when a field is added to llm.Message,
// llm.Content, llm.Usage or llm.Cost without a case in the fast path:
// messages with it would still decode right (through encoding/json), only
// slowly.
func TestFastPathHandlesEveryField(t *testing.T) {
	for _, set := range []struct {
		keys []string
		obj  func(key string) string
	}{
		{messageKeys, func(k string) string { return `{"` + k + `":` + sample(k) + `}` }},
		{contentKeys, func(k string) string { return `{"content":[{"` + k + `":` + sample(k) + `}]}` }},
		{usageKeys, func(k string) string { return `{"usage":{"` + k + `":` + sample(k) + `}}` }},
		{costKeys, func(k string) string { return `{"usage":{"cost":{"` + k + `":` + sample(k) + `}}}` }},
	} {
		for _, k := range set.keys {
			data := set.obj(k)
			r := reader{data: []byte(data), arena: &Arena{}}
			var m llm.Message
			if !decodeMessage(&r, &m) {
				t.Errorf("the fast path does not handle %s", data)
			}
			checkMessage(t, []byte(data))
		}
	}
}

// sample is a value of the type of the field named k.
func sample(k string) string {
	switch k {
	case "content":
		return `[]`
	case "usage", "cost", "errorInfo", "bash", "details", "arguments":
		return `{}`
	case "timestamp", "tokensBefore", "input", "output", "cacheRead", "cacheWrite", "totalTokens", "total":
		return `1`
	case "isError", "display":
		return `true`
	}
	return `"x"`
}

// Escapes inside values the fast path skips (unknown keys, raw values) are
// checked too: encoding/json refuses the whole input.
func TestBadEscapesInSkippedValues(t *testing.T) {
	for _, c := range []string{
		`{"role":"user","x":"\u12"}`,
		`{"role":"user","details":{"a":"\q"}}`,
		`{"role":"user","content":[{"type":"toolCall","arguments":{"a":"\u00zz"}}]}`,
		`{"role":"user","details":"\ud800"}`,
	} {
		checkMessage(t, []byte(c))
	}
}

// Many messages decoded from one arena and one shared buffer keep their
// text: the strings of the first are still right once thousands more were
// decoded after them (chunks are never reused or written again), and
// changing a decoded slice (an append to the arguments) changes nothing else.
func TestSharedArenaKeepsEveryMessage(t *testing.T) {
	stored := storedFixture(t)
	// One buffer for everything, as storage's chunks of payloads.
	var buf []byte
	for _, b := range stored {
		buf = append(buf, b...)
	}
	var a Arena
	got := make([]llm.Message, len(stored))
	off := 0
	for i, b := range stored {
		m, err := UnmarshalMessageShared(buf[off:off+len(b):off+len(b)], &a)
		if err != nil {
			t.Fatal(err)
		}
		got[i] = m
		off += len(b)
	}
	for i := range got {
		for j := range got[i].Content {
			if c := &got[i].Content[j]; len(c.Arguments) > 0 {
				_ = append(c.Arguments, "garbage"...)
			}
		}
		_ = append(got[i].Content, llm.Text("x"))
	}
	for i, b := range stored {
		var want llm.Message
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[i].WithoutUnits(), want) {
			t.Fatalf("message %d changed after later decodes:\n got  %#v\n want %#v", i, got[i], want)
		}
		checkUnits(t, got[i])
	}
}

// Strings with escapes longer than an arena chunk, at a chunk's end, and
// arenas that must grow mid-string decode as encoding/json decodes them.
func TestLongEscapedStrings(t *testing.T) {
	var a Arena
	for _, n := range []int{1, 7, 8, 9, 255, 256, 257, arenaBytes/16 - 1, arenaBytes / 4, arenaBytes + 3, 3 * arenaBytes} {
		for _, unit := range []string{`a\nb`, `\"`, `é\u00e9`, `x\ud83d\ude00yz`, `plain text `} {
			text := strings.Repeat(unit, n/len(unit)+1)
			data := []byte(`{"role":"user","content":[{"type":"text","text":"` + text + `"},{"type":"text","text":"` + text[:len(text)/2] + `end"}]}`)
			checkMessage(t, data)
			var want llm.Message
			if err := json.Unmarshal(data, &want); err != nil {
				continue // cut inside an escape
			}
			got, err := UnmarshalMessageShared(data, &a)
			if err != nil || !reflect.DeepEqual(got.WithoutUnits(), want) {
				t.Fatalf("%d × %q: shared arena gives %v", n, unit, err)
			}
			checkUnits(t, got)
		}
	}
}

// BenchmarkDecodeSession decodes every message of a generated session in
// storage's form, as storage's loaders do (one arena, one shared buffer),
// against encoding/json on the same bytes: what the package buys.
func BenchmarkDecodeSession(b *testing.B) {
	for _, sh := range []struct {
		name  string
		shape sessiongen.Shape
	}{
		{"ascii", sessiongen.Shape{Bytes: 5_000_000}},
		{"nonascii", sessiongen.Shape{Bytes: 5_000_000, NonASCII: true}},
	} {
		var stored [][]byte
		size := 0
		for _, e := range sessiongen.Generate(1, sh.shape) {
			if e.Message != nil {
				p, err := json.Marshal(e.Message)
				if err != nil {
					b.Fatal(err)
				}
				stored = append(stored, p)
				size += len(p)
			}
		}
		b.Run(sh.name+"/msgjson", func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				var a Arena
				for _, p := range stored {
					if _, err := UnmarshalMessageShared(p, &a); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run(sh.name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				for _, p := range stored {
					var m llm.Message
					if err := json.Unmarshal(p, &m); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// The decoder carries the UTF-16 length of each text and thinking block it
// reads, escaped or not, ASCII or not: a block that carried nothing differs
// in nothing from its WithoutUnits copy (TextUnits would count it again).
func TestDecoderCarriesUnits(t *testing.T) {
	data := []byte(`{"role":"assistant","content":[{"type":"text","text":"plain ASCII"},` +
		`{"type":"text","text":"h\u00e9llo 😀"},{"type":"thinking","thinking":"é\n中"},` +
		`{"type":"thinking","thinking":"ascii only"}],"timestamp":1}`)
	for _, shared := range []bool{false, true} {
		var m llm.Message
		var err error
		if shared {
			m, err = UnmarshalMessageShared(bytes.Clone(data), new(Arena))
		} else {
			m, err = UnmarshalMessage(data)
		}
		if err != nil || len(m.Content) != 4 {
			t.Fatalf("shared %v: %d blocks, %v", shared, len(m.Content), err)
		}
		checkUnits(t, m)
		for i, c := range m.Content {
			one := llm.Message{Content: []llm.Content{c}}
			if reflect.DeepEqual(one, one.WithoutUnits()) {
				t.Errorf("shared %v: block %d (%s) carries no length", shared, i, c.Type)
			}
		}
	}
}
