package bridge

import "testing"

// An input is classified once, from its text: a known command answered by
// the bot, or input for the model (a message, !steer, !followup).
func TestClassifyInput(t *testing.T) {
	tests := []struct {
		text string
		want inputClass
	}{
		{"please fix the build", inputClass{startsRun: true}},
		{"!status", inputClass{name: "status", command: true}},
		{"!stop now", inputClass{name: "stop", command: true}},
		{"!steer use the other file", inputClass{name: "steer", command: true, startsRun: true}},
		{"!followup and then the docs", inputClass{name: "followup", command: true, startsRun: true}},
		{"!nosuchcommand", inputClass{name: "nosuchcommand", startsRun: true}}, // answered by admit
	}
	for _, tt := range tests {
		if got := classify(tt.text); got != tt.want {
			t.Errorf("classify(%q) = %+v, want %+v", tt.text, got, tt.want)
		}
	}
}
