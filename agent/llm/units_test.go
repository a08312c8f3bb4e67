package llm

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

// FuzzValidUTF16Len checks the decoders' count against converting to UTF-16
// and their validity against utf8.Valid; UTF16Len and UTF16LenBytes count
// invalid bytes as one U+FFFD each, as []rune does.
func FuzzValidUTF16Len(f *testing.F) {
	for _, seed := range []string{"", "abc", "héllo wörld, a longer line of text ✓ ✓ ✓ 😀😀😀 and more ASCII after it",
		strings.Repeat("ü", 40), strings.Repeat("😀", 17) + "x", "a\xffb\xf0\x9f\x98", strings.Repeat("a", 70) + "é"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := len(utf16.Encode([]rune(s)))
		n, ok := ValidUTF16Len([]byte(s))
		if ok != utf8.ValidString(s) || (ok && n != want) {
			t.Fatalf("ValidUTF16Len(%q) = %d, %v; want %d, %v", s, n, ok, want, utf8.ValidString(s))
		}
		if got := UTF16Len(s); got != want {
			t.Fatalf("UTF16Len(%q) = %d, want %d", s, got, want)
		}
		if got := UTF16LenBytes([]byte(s)); got != want {
			t.Fatalf("UTF16LenBytes(%q) = %d, want %d", s, got, want)
		}
	})
}

// A carried length is what TextUnits answers; a text given another length
// afterwards is counted again, and WithoutUnits makes a decoded message
// equal to the same message built by hand.
func TestCarriedUnits(t *testing.T) {
	c := Text("😀 ok")
	c.SetTextUnits(99) // a decoder's claim is believed while Text keeps its length
	if got := c.TextUnits(); got != 99 {
		t.Errorf("TextUnits with a carried length: got %d, want 99", got)
	}
	c.Text = "😀 okay"
	if got := c.TextUnits(); got != 7 {
		t.Errorf("TextUnits after Text changed: got %d, want 7", got)
	}
	th := Content{Type: ContentThinking, Thinking: "中文"}
	th.SetThinkingUnits(2)
	if got := th.ThinkingUnits(); got != 2 {
		t.Errorf("ThinkingUnits: got %d, want 2", got)
	}
	if got := (&Content{Type: ContentThinking, Thinking: "中文!"}).ThinkingUnits(); got != 3 {
		t.Errorf("ThinkingUnits, counted: got %d, want 3", got)
	}

	decoded := Message{Role: RoleAssistant, Content: []Content{Text("a"), {Type: ContentThinking, Thinking: "b"}}}
	decoded.Content[0].SetTextUnits(1)
	decoded.Content[1].SetThinkingUnits(1)
	built := Message{Role: RoleAssistant, Content: []Content{Text("a"), {Type: ContentThinking, Thinking: "b"}}}
	if reflect.DeepEqual(decoded, built) {
		t.Fatal("carried lengths are invisible to DeepEqual: the test below proves nothing")
	}
	if !reflect.DeepEqual(decoded.WithoutUnits(), built) {
		t.Errorf("WithoutUnits: %+v is not %+v", decoded.WithoutUnits(), built)
	}
	if decoded.Content[0].TextUnits() != 1 || decoded.Content[0].textUnits == (units{}) {
		t.Error("WithoutUnits changed the message it was called on")
	}
}

// A text replaced by another of the same byte length ("é" is 2 bytes and 1
// unit, "ab" 2 bytes and 2 units) is counted again, and so is a prefix of the
// carried text, which shares its start.
func TestCarriedUnitsSameByteLength(t *testing.T) {
	c := Text("é")
	c.SetTextUnits(1)
	c.Text = "ab"
	if got := c.TextUnits(); got != 2 {
		t.Errorf("TextUnits after Text became another of the same byte length: got %d, want 2", got)
	}
	th := Content{Type: ContentThinking, Thinking: "ab"}
	th.SetThinkingUnits(2)
	th.Thinking = "é"
	if got := th.ThinkingUnits(); got != 1 {
		t.Errorf("ThinkingUnits after Thinking became another of the same byte length: got %d, want 1", got)
	}
	long := Text("😀😀 and more")
	long.SetTextUnits(UTF16Len(long.Text))
	long.Text = long.Text[:8]
	if got := long.TextUnits(); got != 4 {
		t.Errorf("TextUnits of a prefix of the carried text: got %d, want 4", got)
	}
}
