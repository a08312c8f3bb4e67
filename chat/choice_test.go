package chat

import (
	"strings"
	"testing"
)

// A choice's value is one word of a repository name's letters: nothing a
// payload carries can make ChoiceText more than the command and that word.
func TestValidChoice(t *testing.T) {
	for _, v := range []string{"app", "web-ui", "a.b_c", "_x", "A9", strings.Repeat("a", MaxChoiceLen)} {
		if !ValidChoice(v) {
			t.Errorf("ValidChoice(%q) = false, want true", v)
		}
	}
	for _, v := range []string{"", ".hidden", "-flag", "two words", "app\n!reset", "app;rm", "ä", "<@U1>", "a/b",
		strings.Repeat("a", MaxChoiceLen+1)} {
		if ValidChoice(v) {
			t.Errorf("ValidChoice(%q) = true, want false", v)
		}
	}
	if got := ChoiceText("repo", "web"); got != "!repo web" {
		t.Errorf("ChoiceText = %q", got)
	}
}
