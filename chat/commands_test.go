package chat_test

import (
	"testing"

	"github.com/threadsmith/threadsmith/chat"
)

// A command's usage line and text follow its argument: a required one is
// shown bare, an optional one in brackets, and the value given follows the
// command word in the text.
func TestCommandSpecUsageAndText(t *testing.T) {
	steer := chat.CommandSpec{Name: "steer", Arg: &chat.CommandArg{Name: "text", Placeholder: "message", Required: true}}
	compact := chat.CommandSpec{Name: "compact", Arg: &chat.CommandArg{Name: "focus", Placeholder: "text"}}
	stop := chat.CommandSpec{Name: "stop"}
	for _, tt := range []struct{ got, want string }{
		{steer.Usage("/"), "/steer text:<message>"},
		{compact.Usage("/"), "/compact [focus:<text>]"},
		{stop.Usage("/"), "/stop"},
		{steer.Text("  go left "), "!steer go left"},
		{compact.Text(""), "!compact"},
		{stop.Text("ignored"), "!stop"},
	} {
		if tt.got != tt.want {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
}
