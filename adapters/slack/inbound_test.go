package slack

import (
	"testing"
	"time"
)

func TestStripMention(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"<@UBOT> !status", "!status"},
		{"<@UBOT|threadsmith> fix it", "fix it"},
		{"  <@UBOT>\n!stop", "!stop"},
		{"<@UBOT>", ""},
		{"hey <@UBOT> look", "hey <@UBOT> look"},   // not leading: kept
		{"<@UBOT2> not me", "<@UBOT2> not me"},     // another user
		{"<@UBOTX|x> not me", "<@UBOTX|x> not me"}, // another user with a label
		{"<@UOTHER> <@UBOT> hi", "<@UOTHER> <@UBOT> hi"},
	} {
		if got := stripMention(tc.in, "UBOT"); got != tc.want {
			t.Errorf("stripMention(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTSOrderAndTime(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"1700000000.000200", "1700000000.000100", true},
		{"1700000000.000100", "1700000000.000100", false},
		{"1700000001.000000", "1700000000.999999", true},
		{"1700000000.1", "1700000000.000100", true},
		{"999999999.000000", "1700000000.000000", false},
		{"1700000000.000001", "", true},
		{"", "1700000000.000001", false},
	} {
		if got := tsAfter(tc.a, tc.b); got != tc.want {
			t.Errorf("tsAfter(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
	if got, want := tsTime("1700000000.000100"), time.Unix(1700000000, 100_000); !got.Equal(want) {
		t.Errorf("tsTime = %v, want %v", got, want)
	}
	if got := tsTime("nonsense"); !got.IsZero() {
		t.Errorf("tsTime(nonsense) = %v, want zero", got)
	}
}

func TestIsInput(t *testing.T) {
	id := identity{UserID: "UBOT", BotID: "BBOT", TeamID: "T1"}
	for _, tc := range []struct {
		name string
		m    message
		want bool
	}{
		{"plain", message{User: "U1"}, true},
		{"file share", message{User: "U1", SubType: "file_share"}, true},
		{"thread broadcast", message{User: "U1", SubType: "thread_broadcast"}, true},
		{"mention", message{User: "U1", AppMention: true}, true},
		{"edited mention", message{User: "U1", AppMention: true, Edited: true}, false},
		{"bot", message{User: "U1", BotID: "B2"}, false},
		{"own", message{User: "UBOT"}, false},
		{"own mention", message{User: "UBOT", AppMention: true}, false},
		{"no user", message{}, false},
		{"changed", message{User: "U1", SubType: "message_changed"}, false},
		{"join", message{User: "U1", SubType: "channel_join"}, false},
		{"me message", message{User: "U1", SubType: "me_message"}, false},
		{"hidden", message{User: "U1", Hidden: true}, false},
	} {
		if got := tc.m.isInput(id); got != tc.want {
			t.Errorf("%s: isInput = %v, want %v", tc.name, got, tc.want)
		}
	}
}
