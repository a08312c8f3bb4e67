package web

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
)

// BenchmarkRebuildWithEditDiffs times one live-follow build of a session of
// 1,000 edits whose results carry their diff (4.6 KB) in their details, as
// the edit tool's do: the page looks in a result's details only for where
// bash kept a whole output.
func BenchmarkRebuildWithEditDiffs(b *testing.B) {
	f := newFixture(b)
	f.prompt("alice", "start")
	details, err := json.Marshal(map[string]any{"diff": strings.Repeat("-old line of code here\n+new line of code here\n", 100), "replacements": 1})
	if err != nil {
		b.Fatal(err)
	}
	var es []transcript.Entry
	for i := range 1000 {
		id := fmt.Sprint("c", i)
		r := toolResult(id, "edit", "Edited a.go")
		r.Details = details
		es = append(es, msg(toolCall(id, "edit", `{"path":"a.go"}`)), msg(r))
	}
	f.append(es...)
	s := New(Options{Store: f.db, Key: []byte(testKey), PublicURL: "https://bot.example.com",
		FullOutput: func(storage.Thread, string) (*os.File, error) { return nil, os.ErrNotExist }})
	for b.Loop() {
		if _, err := s.build(f.ctx, f.thread.ID, ""); err != nil {
			b.Fatal(err)
		}
	}
}
