package bridge

import (
	"testing"

	"github.com/threadsmith/threadsmith/storage"
)

// An input is classified once, from its text: a known command answered by
// the bot, or input for the model (a message, !steer, !followup).
func TestClassifyInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want inputClass
	}{
		{"please fix the build", inputClass{startsRun: true}},
		{"!status", inputClass{name: "status", command: true}},
		{"!stop now", inputClass{name: "stop", command: true}},
		{"!steer use the other file", inputClass{name: "steer", command: true, startsRun: true}},
		{"!followup and then the docs", inputClass{name: "followup", command: true, startsRun: true}},
		{"!nosuchcommand", inputClass{name: "nosuchcommand", unknown: true, startsRun: true}}, // answered by admit
		{"/skill:x do it", inputClass{name: "skill:x", startsRun: true}},
		{"!review", inputClass{name: "review", startsRun: true}},
	}
	for _, tt := range tests {
		if got := classify(tt.text); got != tt.want {
			t.Errorf("classify(%q) = %+v, want %+v", tt.text, got, tt.want)
		}
	}
}

// The mode stored with an input comes from the same classification.
func TestInputClassMode(t *testing.T) {
	t.Parallel()
	for text, want := range map[string]storage.InboundMode{
		"please fix it": storage.ModePrompt, "!steer now": storage.ModeSteer, "!followup later": storage.ModeFollowUp,
		"!status": storage.ModeCommand, "!nosuchcommand": storage.ModePrompt, "!review": storage.ModePrompt,
	} {
		if got := classify(text).mode(); got != want {
			t.Errorf("classify(%q).mode() = %q, want %q", text, got, want)
		}
	}
}
