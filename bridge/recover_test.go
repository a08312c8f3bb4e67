package bridge

import "testing"

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
