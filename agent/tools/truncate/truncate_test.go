package truncate

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func numbered(n int) string {
	lines := make([]string, n)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d", i+1)
	}
	return strings.Join(lines, "\n")
}

// The vectors below are pi's (truncate.ts run on the same inputs).
func TestHeadKeepsFirst2000Lines(t *testing.T) {
	r := Head(numbered(3000), Limits{})
	if !r.Truncated || r.By != ByLines || r.OutputLines != 2000 || r.OutputBytes != 18892 || r.TotalLines != 3000 {
		t.Fatalf("got truncated=%v by=%q lines=%d bytes=%d total=%d, want true lines 2000 18892 3000",
			r.Truncated, r.By, r.OutputLines, r.OutputBytes, r.TotalLines)
	}
	if !strings.HasPrefix(r.Content, "line 1\n") || !strings.HasSuffix(r.Content, "\nline 2000") {
		t.Fatalf("content starts %q ends %q", r.Content[:10], r.Content[len(r.Content)-10:])
	}
}

func TestTailKeepsLast2000Lines(t *testing.T) {
	r := Tail(numbered(3000), Limits{})
	if !r.Truncated || r.By != ByLines || r.OutputLines != 2000 || r.OutputBytes != 19999 {
		t.Fatalf("got truncated=%v by=%q lines=%d bytes=%d, want true lines 2000 19999", r.Truncated, r.By, r.OutputLines, r.OutputBytes)
	}
	if !strings.HasPrefix(r.Content, "line 1001\n") || !strings.HasSuffix(r.Content, "\nline 3000") {
		t.Fatalf("content starts %q", r.Content[:12])
	}
}

func TestHeadByBytes(t *testing.T) {
	s := strings.Repeat(strings.Repeat("x", 99)+"\n", 999) + strings.Repeat("x", 99)
	r := Head(s, Limits{})
	if r.By != ByBytes || r.OutputLines != 512 || r.OutputBytes != 51199 || len(r.Content) != 51199 {
		t.Fatalf("got by=%q lines=%d bytes=%d len=%d, want bytes 512 51199", r.By, r.OutputLines, r.OutputBytes, len(r.Content))
	}
	tr := Tail(s, Limits{})
	if tr.By != ByBytes || tr.OutputLines != 512 || tr.OutputBytes != 51199 {
		t.Fatalf("tail got by=%q lines=%d bytes=%d, want bytes 512 51199", tr.By, tr.OutputLines, tr.OutputBytes)
	}
}

func TestTrailingNewlineIsAnEmptyLine(t *testing.T) {
	r := Head("a\nb\n", Limits{MaxLines: 2})
	if r.TotalLines != 3 || !r.Truncated || r.Content != "a\nb" {
		t.Fatalf("got total=%d truncated=%v content=%q, want 3 true \"a\\nb\"", r.TotalLines, r.Truncated, r.Content)
	}
	r = Head("a\nb\n", Limits{})
	if r.Truncated || r.Content != "a\nb\n" || r.OutputLines != 3 {
		t.Fatalf("got %+v, want untouched with 3 lines", r)
	}
}

func TestHeadFirstLineTooLong(t *testing.T) {
	r := Head(strings.Repeat("y", MaxBytes+1)+"\nshort", Limits{})
	if !r.FirstLineTooLong || r.Content != "" || r.By != ByBytes {
		t.Fatalf("got firstLineTooLong=%v content len %d by=%q, want true 0 bytes", r.FirstLineTooLong, len(r.Content), r.By)
	}
}

func TestTailLongLastLineKeepsItsEndOnRuneBoundary(t *testing.T) {
	// "é" is two bytes; with an odd cut the first kept byte would be a continuation byte.
	last := "start" + strings.Repeat("é", MaxBytes) // 5 + 2*51200 bytes
	r := Tail("first\n"+last, Limits{})
	if !r.LastLinePartial || r.By != ByBytes || r.OutputLines != 1 {
		t.Fatalf("got partial=%v by=%q lines=%d, want true bytes 1", r.LastLinePartial, r.By, r.OutputLines)
	}
	if len(r.Content) != MaxBytes || !utf8.ValidString(r.Content) || !strings.HasSuffix(last, r.Content) {
		t.Fatalf("got %d bytes valid=%v, want the last %d bytes of the line", len(r.Content), utf8.ValidString(r.Content), MaxBytes)
	}
	odd := "z" + strings.Repeat("é", MaxBytes)
	r = Tail(odd+"x", Limits{}) // 1 + 102400 + 1 bytes: the cut lands inside a rune
	if len(r.Content) != MaxBytes-1 || !utf8.ValidString(r.Content) {
		t.Fatalf("got %d bytes valid=%v, want %d valid bytes", len(r.Content), utf8.ValidString(r.Content), MaxBytes-1)
	}
}

func TestNoTruncation(t *testing.T) {
	for _, s := range []string{"", "one", "a\nb\nc"} {
		if r := Head(s, Limits{}); r.Truncated || r.Content != s {
			t.Errorf("Head(%q) = %+v, want untouched", s, r)
		}
		if r := Tail(s, Limits{}); r.Truncated || r.Content != s {
			t.Errorf("Tail(%q) = %+v, want untouched", s, r)
		}
	}
}

func TestLine(t *testing.T) {
	if got, cut := Line("short", 500); got != "short" || cut {
		t.Fatalf("got %q %v", got, cut)
	}
	long := strings.Repeat("ü", 600)
	got, cut := Line(long, 500)
	if !cut || !strings.HasPrefix(got, strings.Repeat("ü", 500)) || strings.HasPrefix(got, strings.Repeat("ü", 501)) {
		t.Fatalf("got cut=%v len=%d, want the first 500 characters and a mark", cut, len(got))
	}
}

func TestFormatSize(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1024: "1.0KB", 51200: "50.0KB", 1536 * 1024: "1.5MB"} {
		if got := FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
