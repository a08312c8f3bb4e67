package agent_test

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net/url"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/openai"
	"github.com/threadsmith/threadsmith/agent/transcript"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// When a run ends, the session has its store keep a snapshot of its live
// entries, taken after the run's last append: a resume then reads the
// snapshot, and gets the entries the run stored.
func TestRunEndTakesASnapshot(t *testing.T) {
	t.Parallel()
	fake := llmfake.New(t)
	fake.Handle(func(req llmfake.Request) llmfake.Response {
		if req.LastMessage().Role == "tool" {
			return llmfake.Stream(llmfake.Content("done"), llmfake.Usage(100, 5, 0), llmfake.Finish("stop"))
		}
		return llmfake.Stream(llmfake.ToolCalls(llmfake.Call{ID: "c1", Name: "probe", Args: `{"x": 1}`}), llmfake.Usage(100, 5, 0), llmfake.Finish("tool_calls"))
	})
	client, err := openai.New(openai.Config{BaseURL: fake.URL(), APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), sqlite.FileName)
	db, err := sqlite.Open(ctx, path, sqlite.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Channel: "C1", Thread: "1"}, storage.ThreadInit{})
	if err != nil {
		t.Fatal(err)
	}
	row, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "fake-model"})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := agent.New(agent.Config{
		ID: row.ID, Model: client, ModelName: "fake-model", SystemPrompt: "test",
		Tools: []agent.Tool{&testTool{name: "probe", readOnly: true}}, MaxTokens: 1000, ContextWindow: 128000,
		Store: db, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sess.Prompt(ctx, "run the probe", agent.PromptOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := sess.Close(ctx); err != nil {
		t.Fatal(err)
	}
	entries, err := db.LoadEntries(ctx, row.ID)
	if err != nil || len(entries) < 4 {
		t.Fatalf("LoadEntries = %d entries, %v; want the prompt, the call, its result and the answer", len(entries), err)
	}

	raw, err := sql.Open("sqlite", (&url.URL{Scheme: "file", Path: path}).String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var upto int64
	if err := raw.QueryRowContext(ctx, `SELECT upto FROM session_snapshots WHERE session_id = (SELECT id FROM sessions WHERE uid = ?)`, row.ID).Scan(&upto); err != nil {
		t.Fatalf("the session's snapshot: %v", err)
	}
	if last := entries[len(entries)-1].Seq; upto != last {
		t.Fatalf("the snapshot holds entries up to seq %d; the run's last is %d", upto, last)
	}
	live, err := db.LoadLiveEntries(ctx, row.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(transcript.WithoutUnits(live), transcript.WithoutUnits(entries)) {
		t.Fatal("the entries resumed from the snapshot differ from the stored ones")
	}
}

// snapshotFailing is a store whose snapshots fail, counting the asks.
type snapshotFailing struct {
	*memStore
	asked atomic.Int32
}

func (s *snapshotFailing) SnapshotSession(context.Context, string) error {
	s.asked.Add(1)
	return errors.New("disk I/O error")
}

// A snapshot that fails costs nothing but its log line: each run still
// ends, its entries are stored, nobody is told of a failed persist, and the
// next run ends with a snapshot asked for again.
func TestFailedSnapshotLeavesTheSessionWorking(t *testing.T) {
	t.Parallel()
	store := &snapshotFailing{memStore: &memStore{}}
	h := newHarness(t, func(c *agent.Config) { c.Store = store })
	h.llm.Handle(func(req llmfake.Request) llmfake.Response {
		return llmfake.TextReply("ok: " + req.LastMessage().Content)
	})
	h.prompt("first")
	h.prompt("second")
	h.wait()
	if n := store.asked.Load(); n != 2 {
		t.Errorf("snapshots asked for = %d, want one per run", n)
	}
	if got := len(store.all()); got != 4 {
		t.Errorf("stored entries = %d, want both prompts and both answers", got)
	}
	for _, ev := range h.recorded() {
		if pf, ok := ev.(agent.PersistFailed); ok {
			t.Errorf("a failed snapshot was reported as a failed persist: %+v", pf)
		}
	}
}
