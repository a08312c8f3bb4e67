package msgjson

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

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

// TestRandomEscapesMatchEncodingJSON decodes messages whose strings hold
// random escapes, non-ASCII text and errors, and compares with encoding/json.
func TestRandomEscapesMatchEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 4))
	for range 20000 {
		text, other := randomJSONText(r), randomJSONText(r)
		msg := `{"role":"user","content":[{"type":"text","text":"` + text + `"},{"type":"thinking","thinking":"` + other + `"}],"errorMessage":"` + other + `"}`
		if r.IntN(4) == 0 { // a repeated key after the strings: refused at the end
			msg = strings.TrimSuffix(msg, "}") + `,"role":"user"}`
		}
		checkMessage(t, []byte(msg))
	}
}

// keyIndex finds every key of each set through its index, skips keys the
// types do not have, and refuses a key that matches one only without
// regard to case (encoding/json would take it for that field).
func TestKeySets(t *testing.T) {
	for _, set := range []*keySet{messageSet, contentSet, usageSet, costSet} {
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

// Long texts with escapes: random runs of 0 to 100 plain bytes between
// escapes (one-letter ones, \u, a bad escape now and then, a control byte,
// invalid UTF-8), escapes and the closing quote at every offset of the
// eight-byte words; strings after them must be intact.
func TestLongTexts(t *testing.T) {
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
		checkMessage(t, []byte(`{"role":"user","content":[{"type":"text","text":"`+a+`"},{"type":"text","text":"`+c+`"}],"errorMessage":"`+c[:len(c)/3]+`"}`+tail))
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
