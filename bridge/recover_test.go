package bridge

import (
	"strconv"
	"testing"
)

func TestInterruptedStatusKeepsWhatTheMessageShowed(t *testing.T) {
	tests := []struct{ saved, want string }{
		{"⏳ working… · `app` · `bot/x`\n\n✓ `ls` · 3ms\n\npartial answer", "✓ `ls` · 3ms\n\npartial answer\n\n⚠️ _interrupted: the bot restarted_"},
		{"⏳ working… · `app` · `bot/x`", "⚠️ _interrupted: the bot restarted_"},
		{"✓ `read` `a.go` · 1ms", "✓ `read` `a.go` · 1ms\n\n⚠️ _interrupted: the bot restarted_"},
	}
	for _, tt := range tests {
		if got := interruptedStatus(tt.saved); got != tt.want {
			t.Errorf("interruptedStatus(%q) = %q, want %q", tt.saved, got, tt.want)
		}
	}
}

func TestRecentSetForgetsTheOldest(t *testing.T) {
	var r recentSet
	r.add([]string{"a", "b"})
	if !r.hasAny([]string{"x", "b"}) || r.hasAny([]string{"x"}) {
		t.Fatal("recentSet does not answer for what it holds")
	}
	for i := range recentSetSize {
		r.add([]string{"k" + strconv.Itoa(i)})
	}
	if r.hasAny([]string{"a"}) || r.hasAny([]string{"b"}) {
		t.Fatal("recentSet kept keys beyond its size")
	}
	if !r.hasAny([]string{"k" + strconv.Itoa(recentSetSize-1)}) || len(r.keys) != recentSetSize {
		t.Fatalf("recentSet holds %d keys, want %d with the newest", len(r.keys), recentSetSize)
	}
}
