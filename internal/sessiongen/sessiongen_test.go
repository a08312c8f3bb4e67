package sessiongen

import (
	"bytes"
	"os"
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
