package chat

import (
	"slices"
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

// A menu shows the first n options with a valid value, a blank label
// showing the value, and its label or "Choose…" before a choice.
func TestMenuOptions(t *testing.T) {
	act := Action{ID: "repo", Options: []Option{
		{Value: "app", Label: "App"}, {Value: "web\n!reset", Label: "forged"}, {Value: "web", Label: " "}, {Value: "docs"},
	}}
	got := MenuOptions(act, 2)
	want := []Option{{Value: "app", Label: "App"}, {Value: "web", Label: "web"}}
	if !slices.Equal(got, want) {
		t.Errorf("MenuOptions = %+v, want %+v", got, want)
	}
	if p := MenuPlaceholder(act); p != "Choose…" {
		t.Errorf("placeholder without a label = %q", p)
	}
	act.Label = "Repository"
	if p := MenuPlaceholder(act); p != "Repository" {
		t.Errorf("placeholder = %q, want the label", p)
	}
}
