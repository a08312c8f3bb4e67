package sessiongen

import (
	"bytes"
	"os"
	"reflect"
	"testing"

	"github.com/threadsmith/threadsmith/agent/transcript"
)

func TestEntriesArePrefixes(t *testing.T) {
	long, short := Entries(3, 600), Entries(3, 300)
	for i := range short {
		if short[i].Seq != long[i].Seq || short[i].Type != long[i].Type || short[i].Timestamp != long[i].Timestamp {
			t.Fatalf("entry %d differs between a 300- and a 600-entry session", i)
		}
	}
	compactions := 0
	for _, e := range long {
		if e.Type == transcript.EntryCompaction {
			compactions++
		}
	}
	if compactions == 0 {
		t.Error("600 entries without a compaction")
	}
}

// TestWritePiFile writes the 5,000-entry benchmark session as a pi file when
// THREADSMITH_PI_SESSION_OUT names one, for pi's anchor script:
//
//	THREADSMITH_PI_SESSION_OUT=/tmp/gen5000.jsonl go test -run TestWritePiFile ./internal/sessiongen/
//	node bench.mjs /tmp/gen5000.jsonl
func TestWritePiFile(t *testing.T) {
	var b bytes.Buffer
	if err := WritePi(&b, Entries(7, 5000)); err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b.Bytes(), []byte("\n")); n != 5001 {
		t.Fatalf("%d lines, want 5001", n)
	}
	if out := os.Getenv("THREADSMITH_PI_SESSION_OUT"); out != "" {
		if err := os.WriteFile(out, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", out, b.Len())
	}
}

// TestShapes checks that each knob of Shape changes the session as it says and
// that the zero shape is Entries' session.
func TestShapes(t *testing.T) {
	if !reflect.DeepEqual(Generate(3, Shape{Entries: 400}), Entries(3, 400)) {
		t.Fatal("the zero shape differs from Entries")
	}
	textBytes := func(es []transcript.Entry) (total, nonASCII, biggest, compactions int) {
		for _, e := range es {
			if e.Type == transcript.EntryCompaction {
				compactions++
			}
			if e.Message == nil {
				continue
			}
			for _, c := range e.Message.Content {
				s := c.Text + c.Thinking
				total += len(s)
				biggest = max(biggest, len(s))
				for _, r := range s {
					if r >= 0x80 {
						nonASCII++
					}
				}
			}
		}
		return
	}
	total, nonASCII, _, compactions := textBytes(Generate(1, Shape{Bytes: 1_000_000}))
	if total < 950_000 || total > 1_100_000 || nonASCII != 0 || compactions != 2 {
		t.Errorf("default shape of 1 MB: %d bytes, %d non-ASCII runes, %d compactions", total, nonASCII, compactions)
	}
	if _, nonASCII, _, _ := textBytes(Generate(1, Shape{Bytes: 200_000, NonASCII: true})); nonASCII < 10_000 {
		t.Errorf("non-ASCII shape: only %d non-ASCII runes", nonASCII)
	}
	if _, _, biggest, _ := textBytes(Generate(1, Shape{Bytes: 3_000_000, HugeEvery: 3, HugeMin: 500_000, HugeMax: 600_000})); biggest < 500_000 {
		t.Errorf("huge outputs: the biggest text is %d bytes", biggest)
	}
	if _, _, biggest, _ := textBytes(Generate(1, Shape{Bytes: 200_000, ResultMin: 40, ResultMax: 400, AnswerEvery: 12})); biggest > 1500 {
		t.Errorf("small calls: a text of %d bytes", biggest)
	}
	if _, _, _, compactions := textBytes(Generate(1, Shape{Bytes: 1_000_000, CompactAt: 50_000, Keep: 20_000})); compactions < 15 {
		t.Errorf("frequent compactions: only %d", compactions)
	}
}
