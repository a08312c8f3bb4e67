package backend_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/internal/sessiongen"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// What Encode stores, the Decoder gives back, in order, for a session large
// enough to be decoded by the workers.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	entries := sessiongen.Entries(7, 1000)
	got := stored(t, entries)
	want := transcript.BuildContext(entries)
	if have := transcript.BuildContext(transcript.WithoutUnits(got)); len(got) != len(entries) || !reflect.DeepEqual(have, want) {
		t.Fatalf("decoded %d entries of %d; their context differs from the encoded ones'", len(got), len(entries))
	}
}

// A user message's InputID is the input AppendEntries delivers; no other
// entry delivers anything.
func TestEncodeInputID(t *testing.T) {
	user := llm.UserText("go")
	user.InputID = "42"
	assistant := llm.Message{Role: llm.RoleAssistant, Content: []llm.Content{llm.Text("ok")}, InputID: "43"}
	bad := llm.UserText("go")
	bad.InputID = "x"
	for _, c := range []struct {
		m    llm.Message
		want int64
	}{{user, 42}, {assistant, 0}, {bad, 0}, {llm.UserText("plain"), 0}} {
		r, err := backend.Encode(transcript.Entry{Seq: 1, Type: transcript.EntryMessage, Message: &c.m})
		if err != nil {
			t.Fatal(err)
		}
		if r.InputID != c.want {
			t.Errorf("%s message with input id %q: InputID %d, want %d", c.m.Role, c.m.InputID, r.InputID, c.want)
		}
	}
}

// A payload that does not decode is storage.ErrCorrupt.
func TestDecodeCorrupt(t *testing.T) {
	var d backend.Decoder
	d.Add(0, string(transcript.EntryMessage), 0, []byte(`{"role":`))
	if _, err := d.Result(); !errors.Is(err, storage.ErrCorrupt) {
		t.Fatalf("Result = %v, want ErrCorrupt", err)
	}
}

// Only the moves the inbound state machine allows have a source state.
func TestInboundFrom(t *testing.T) {
	for _, s := range []storage.InboundState{storage.InboundQueued, storage.InboundDelivered, storage.InboundDropped} {
		if from, err := backend.InboundFrom(s); err != nil || from != [2]storage.InboundState{storage.InboundReceived, storage.InboundQueued} {
			t.Errorf("InboundFrom(%s) = %v, %v; want from received or queued", s, from, err)
		}
	}
	if _, err := backend.InboundFrom(storage.InboundReceived); !errors.Is(err, storage.ErrInvalidTransition) {
		t.Errorf("InboundFrom(received) = %v, want ErrInvalidTransition", err)
	}
}
