package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// recordedUsage is the real store with the run usage records replaced, to
// tell a page that reads them from one that sums the replies again.
type recordedUsage struct {
	*sqlite.DB
	usage map[int64]storage.RunUsage
}

func (r recordedUsage) ThreadRunUsage(context.Context, int64) (map[int64]storage.RunUsage, error) {
	return r.usage, nil
}

// An ended run shows its stored usage record: input, output, cache read and
// write, cost, and the models that replied.
func TestRunShowsItsUsageRecord(t *testing.T) {
	f := newFixture(t)
	run := f.prompt("Alice", "switch and go on")
	f.append(msg(toolCall("call_1", "ls", `{}`)), msg(toolResult("call_1", "ls", "a.go")))
	f.append(msg(llm.Message{Role: llm.RoleAssistant, Model: "claude-test", StopReason: llm.StopReasonStop,
		Content: []llm.Content{llm.Text("done")}, Usage: &llm.Usage{Input: 30, Output: 20, CacheRead: 4000, CacheWrite: 600, Cost: &llm.Cost{Total: 0.01}}}))
	if err := f.db.FinishRun(f.ctx, run, storage.RunDone); err != nil {
		t.Fatal(err)
	}
	page := func(st Store) string {
		t.Helper()
		s := New(Options{Store: st, Key: []byte(testKey), PublicURL: "https://bot.example.com"})
		srv := httptest.NewServer(s.Handler())
		defer srv.Close()
		code, body := get(t, f.pageURL(srv, s), nil)
		if code != http.StatusOK {
			t.Fatalf("GET page = %d\n%s", code, body)
		}
		return body
	}
	body := page(f.db)
	for _, want := range []string{"input 1.2k", "output 60", "cache read 4.0k", "cache write 600", "$0.0225", "gpt-test, claude-test"} {
		if !strings.Contains(body, want) {
			t.Errorf("the run lacks %q:\n%s", want, body[strings.Index(body, "Run 1"):][:600])
		}
	}
	// What is shown is the record, not a sum made again from the replies.
	body = page(recordedUsage{f.db, map[int64]storage.RunUsage{run: {
		Usage:  storage.Usage{Replies: 2, Input: 7, Output: 8, CacheRead: 9, CacheWrite: 10, Cost: 1.5},
		Models: []string{"recorded-model"},
	}}})
	for _, want := range []string{"input 7 · output 8 · cache read 9 · cache write 10 · $1.5000 · recorded-model"} {
		if !strings.Contains(body, want) {
			t.Errorf("the run lacks %q:\n%s", want, body[strings.Index(body, "Run 1"):][:600])
		}
	}
}
