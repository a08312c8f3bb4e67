package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// newSession creates a thread and a session on it.
func newSession(t testing.TB, db *sqlite.DB, thread string) storage.Session {
	t.Helper()
	ctx := context.Background()
	th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C1", Thread: thread}, storage.ThreadInit{})
	if err != nil {
		t.Fatalf("EnsureThread: %v", err)
	}
	s, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "gpt-4.1"})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	return s
}

func load(t testing.TB, db *sqlite.DB, sessionID string) []transcript.Entry {
	t.Helper()
	got, err := db.LoadEntries(context.Background(), sessionID)
	if err != nil {
		t.Fatalf("LoadEntries: %v", err)
	}
	return got
}

func TestEntriesRoundTripEveryType(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	s := newSession(t, db, "1.1")
	errInfo := &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 429, Code: "rate_limit_exceeded", Message: "slow down", RetryAfter: 2e9}
	exit := 1
	entries := []transcript.Entry{
		transcript.MessageEntry(0, llm.Message{Role: llm.RoleUser, Timestamp: 1, InputID: "17",
			Content: []llm.Content{llm.Text("look at this"), llm.Image("image/png", "iVBORw0KGgo=")}}),
		transcript.MessageEntry(1, llm.Message{Role: llm.RoleAssistant, Timestamp: 2, StopReason: llm.StopReasonError,
			ErrorMessage: "429 rate_limit_exceeded: slow down", ErrorInfo: errInfo}),
		transcript.MessageEntry(2, llm.Message{Role: llm.RoleAssistant, Timestamp: 3, Provider: "openai", Model: "gpt-4.1",
			Usage:      &llm.Usage{Input: 10, Output: 5, CacheRead: 2, CacheWrite: 1, TotalTokens: 18},
			StopReason: llm.StopReasonToolUse,
			Content: []llm.Content{{Type: llm.ContentThinking, Thinking: "hmm"}, llm.Text("reading"),
				llm.ToolCall("c1", "read", json.RawMessage(`{"path":"a.go"}`))}}),
		transcript.MessageEntry(3, llm.Message{Role: llm.RoleToolResult, Timestamp: 4, ToolCallID: "c1", ToolName: "read",
			IsError: true, Details: json.RawMessage(`{"truncated":true}`), Content: []llm.Content{llm.Text("no such file")}}),
		transcript.MessageEntry(4, llm.Message{Role: llm.RoleCustom, CustomType: "thread_context", Display: true,
			Content: []llm.Content{llm.Text("earlier: alice said hi")}}),
		transcript.MessageEntry(5, llm.Message{Role: llm.RoleBashExecution, Bash: &llm.BashExecution{Command: "ls", Output: "a.go", ExitCode: &exit}}),
		{Seq: 6, Type: transcript.EntryCompaction, Timestamp: 7, Compaction: &transcript.Compaction{Summary: "## Goal\nfix it",
			FirstKeptSeq: 4, TokensBefore: 123456, ReadFiles: []string{"a.go"}, ModifiedFiles: []string{"b.go"}, Reason: "overflow"}},
		{Seq: 7, Type: transcript.EntryModelChange, Timestamp: 8, ModelChange: &transcript.ModelChange{Provider: "openai", Model: "o3"}},
		{Seq: 8, Type: transcript.EntryThinkingLevel, Timestamp: 9, ThinkingLevel: "high"},
		{Seq: 9, Type: transcript.EntryCustom, Timestamp: 10, Custom: &transcript.Custom{Kind: "label", Data: json.RawMessage(`{"x":[1,2]}`)}},
		// A type from a newer version: carried along untouched.
		{Seq: 10, Type: "branch_summary", Timestamp: 11, Raw: json.RawMessage(`{"type":"branch_summary","summary":"s","fromId":"x"}`)},
	}
	// Appended as the agent does, one call per event, plus one batch.
	for _, e := range entries[:5] {
		if err := db.AppendEntries(ctx, s.ID, []transcript.Entry{e}); err != nil {
			t.Fatalf("AppendEntries(seq %d): %v", e.Seq, err)
		}
	}
	if err := db.AppendEntries(ctx, s.ID, entries[5:]); err != nil {
		t.Fatalf("AppendEntries(batch): %v", err)
	}
	got := transcript.WithoutUnits(load(t, db, s.ID))
	if len(got) != len(entries) {
		t.Fatalf("loaded %d entries, want %d", len(got), len(entries))
	}
	for i := range entries {
		if !reflect.DeepEqual(got[i], entries[i]) {
			t.Errorf("entry %d:\n got  %+v\n want %+v", i, got[i], entries[i])
		}
	}

	// Payloads are plain JSON that SQL can look into.
	raw := rawDB(t, db.Path())
	var role string
	if err := raw.QueryRow(`SELECT json_extract(payload, '$.role') FROM entries WHERE seq = 3`).Scan(&role); err != nil {
		t.Fatal(err)
	}
	if role != string(llm.RoleToolResult) {
		t.Errorf("json_extract(payload, '$.role') of seq 3 = %q, want %q", role, llm.RoleToolResult)
	}
}

func TestAppendRejectsDuplicateSeqAtomically(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	s := newSession(t, db, "1.1")
	if err := db.AppendEntries(ctx, s.ID, genEntries(1, 3)); err != nil {
		t.Fatal(err)
	}
	// seq 3 is new, seq 2 is not: the whole call must be refused.
	batch := genEntries(2, 4)[2:]
	err := db.AppendEntries(ctx, s.ID, []transcript.Entry{batch[1], batch[0]})
	var dup *storage.DuplicateEntryError
	if !errors.As(err, &dup) || !errors.Is(err, storage.ErrDuplicateEntry) {
		t.Fatalf("AppendEntries with an existing seq = %v, want a *DuplicateEntryError", err)
	}
	if dup.Seq != 2 || dup.SessionID != s.ID {
		t.Errorf("duplicate error names session %s seq %d, want %s seq 2", dup.SessionID, dup.Seq, s.ID)
	}
	if got := load(t, db, s.ID); len(got) != 3 {
		t.Errorf("after the refused call the session has %d entries, want 3 (nothing of the call stored)", len(got))
	}
	// Two entries with one seq in a single call.
	e := genEntries(3, 5)[4]
	if err := db.AppendEntries(ctx, s.ID, []transcript.Entry{e, e}); !errors.Is(err, storage.ErrDuplicateEntry) {
		t.Errorf("AppendEntries with a seq twice in one call = %v, want ErrDuplicateEntry", err)
	}
	// The same seq in another session is fine.
	other := newSession(t, db, "2.2")
	if err := db.AppendEntries(ctx, other.ID, genEntries(1, 3)); err != nil {
		t.Errorf("AppendEntries of seqs 0..2 in another session: %v", err)
	}
}

func TestAppendAndLoadUnknownSession(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	if err := db.AppendEntries(ctx, "nope", genEntries(1, 1)); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("AppendEntries(unknown session) = %v, want ErrNotFound", err)
	}
	if _, err := db.LoadEntries(ctx, "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("LoadEntries(unknown session) = %v, want ErrNotFound", err)
	}
	s := newSession(t, db, "1.1")
	if got := load(t, db, s.ID); len(got) != 0 {
		t.Errorf("new session has %d entries, want 0", len(got))
	}
	if err := db.AppendEntries(ctx, s.ID, []transcript.Entry{{Seq: 0, Type: transcript.EntryMessage}}); err == nil {
		t.Error("AppendEntries of a message entry without a message succeeded, want an error")
	}
}

// A process that died while a tool ran left an assistant tool call without a
// result; the reloaded context must still be valid for the provider.
func TestReloadAfterCrashMidTool(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/" + sqlite.FileName
	db := openAt(t, path)
	th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "discord", Team: "G1", Channel: "C1", Thread: "99"}, storage.ThreadInit{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := db.CreateSession(ctx, th.ID, storage.SessionInit{})
	if err != nil {
		t.Fatal(err)
	}
	calls := []llm.Content{
		llm.ToolCall("call_a", "bash", json.RawMessage(`{"command":"go test ./..."}`)),
		llm.ToolCall("call_b", "read", json.RawMessage(`{"path":"x.go"}`)),
	}
	for seq, m := range []llm.Message{
		llm.UserText("run the tests"),
		{Role: llm.RoleAssistant, StopReason: llm.StopReasonToolUse, Content: calls},
	} {
		if err := db.AppendEntries(ctx, s.ID, []transcript.Entry{transcript.MessageEntry(int64(seq), m)}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	db = openAt(t, path)
	c := transcript.BuildContext(load(t, db, s.ID))
	if c.NextSeq != 2 {
		t.Errorf("NextSeq = %d, want 2", c.NextSeq)
	}
	if len(c.Messages) != 4 {
		t.Fatalf("context has %d messages, want user, assistant and two synthetic results: %+v", len(c.Messages), c.Messages)
	}
	for i, call := range calls {
		m := c.Messages[2+i]
		if m.Role != llm.RoleToolResult || m.ToolCallID != call.ID || !m.IsError || m.TextContent() != transcript.InterruptedToolResult {
			t.Errorf("message %d = %+v, want an error tool result for %s saying %q", 2+i, m, call.ID, transcript.InterruptedToolResult)
		}
	}
}

// A compaction entry shapes the reloaded context: summary first, then the
// messages from the first kept entry on.
func TestReloadWithCompaction(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	s := newSession(t, db, "1.1")
	var es []transcript.Entry
	for i := range 6 {
		es = append(es, transcript.MessageEntry(int64(i), llm.UserText(string(rune('a'+i)))))
	}
	es = append(es, transcript.Entry{Seq: 6, Type: transcript.EntryCompaction, Compaction: &transcript.Compaction{Summary: "S", FirstKeptSeq: 4}})
	es = append(es, transcript.MessageEntry(7, llm.UserText("h")))
	for _, e := range es {
		if err := db.AppendEntries(ctx, s.ID, []transcript.Entry{e}); err != nil {
			t.Fatal(err)
		}
	}
	c := transcript.BuildContext(load(t, db, s.ID))
	var got []string
	for _, m := range c.Messages {
		if m.Role == llm.RoleCompactionSummary {
			got = append(got, "summary:"+m.Summary)
		} else {
			got = append(got, m.TextContent())
		}
	}
	want := []string{"summary:S", "e", "f", "h"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("context = %q, want %q", got, want)
	}
}

func TestRestoreLargeSession(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/" + sqlite.FileName
	db := openAt(t, path)
	s := newSession(t, db, "1.1")
	want := genEntries(7, 5000)
	// Batches keep this fast under -race; per-event appends are exercised by
	// the concurrency and crash tests.
	for i := 0; i < len(want); i += 250 {
		if err := db.AppendEntries(ctx, s.ID, want[i:min(i+250, len(want))]); err != nil {
			t.Fatalf("AppendEntries(seq %d): %v", want[i].Seq, err)
		}
	}
	db.Close()
	db = openAt(t, path)
	got := transcript.WithoutUnits(load(t, db, s.ID))
	if len(got) != len(want) {
		t.Fatalf("restored %d entries, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("entry %d differs:\n got  %+v\n want %+v", i, got[i], want[i])
		}
	}
}

// LoadContext is BuildContext(LoadEntries) without decoding compacted history.
func TestLoadContextEqualsBuildContext(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	toolCallLast := genEntries(5, 40)
	for toolCallLast[len(toolCallLast)-1].Message.Role != llm.RoleAssistant || len(toolCallLast[len(toolCallLast)-1].Message.ToolCalls()) == 0 {
		toolCallLast = toolCallLast[:len(toolCallLast)-1]
	}
	for name, entries := range map[string][]transcript.Entry{
		"empty":               nil,
		"no compaction":       genEntries(3, 300),
		"tool call last":      toolCallLast,
		"thinking and custom": append(genEntries(6, 10), transcript.Entry{Seq: 10, Type: transcript.EntryThinkingLevel, ThinkingLevel: "high"}, transcript.Entry{Seq: 11, Type: transcript.EntryCustom, Custom: &transcript.Custom{Kind: "k"}}),
	} {
		s := newSession(t, db, name)
		if err := db.AppendEntries(ctx, s.ID, entries); err != nil {
			t.Fatal(err)
		}
		got, err := db.LoadContext(ctx, s.ID)
		if err != nil {
			t.Fatalf("%s: LoadContext: %v", name, err)
		}
		if want := transcript.BuildContext(load(t, db, s.ID)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: LoadContext differs from BuildContext(LoadEntries): %d messages, next seq %d, model %q; want %d, %d, %q",
				name, len(got.Messages), got.NextSeq, got.Model, len(want.Messages), want.NextSeq, want.Model)
		}
	}

	// Compactions every ~220 entries, a model change at 1500.
	s := newSession(t, db, "compactions")
	entries := genEntries(4, 1600)
	if err := db.AppendEntries(ctx, s.ID, entries); err != nil {
		t.Fatal(err)
	}
	var lastCompaction *transcript.Compaction
	for _, e := range entries {
		if e.Compaction != nil {
			lastCompaction = e.Compaction
		}
	}
	if got, want := mustLoadContext(t, db, s.ID), transcript.BuildContext(load(t, db, s.ID)); !reflect.DeepEqual(got, want) {
		t.Errorf("compactions: LoadContext differs from BuildContext(LoadEntries): %d messages, next seq %d, model %q; want %d, %d, %q",
			len(got.Messages), got.NextSeq, got.Model, len(want.Messages), want.NextSeq, want.Model)
	}
	// Compacted history is not even decoded: damage a message before the
	// latest compaction's first kept entry and LoadContext does not notice.
	if _, err := rawDB(t, db.Path()).Exec(`UPDATE entries SET payload = '{broken' WHERE seq = 5 AND session_id = (SELECT id FROM sessions WHERE uid = ?)`, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LoadEntries(ctx, s.ID); !errors.Is(err, storage.ErrCorrupt) {
		t.Errorf("LoadEntries with a damaged payload = %v, want ErrCorrupt", err)
	}
	c := mustLoadContext(t, db, s.ID)
	if !reflect.DeepEqual(c.Compaction, lastCompaction) || c.Model != "gpt-4.1-mini" || c.NextSeq != 1600 {
		t.Errorf("LoadContext = compaction %+v, model %q, next seq %d; want the last compaction (first kept %d), gpt-4.1-mini, 1600",
			c.Compaction, c.Model, c.NextSeq, lastCompaction.FirstKeptSeq)
	}
}

func mustLoadContext(t *testing.T, db *sqlite.DB, sessionID string) transcript.Context {
	t.Helper()
	c, err := db.LoadContext(context.Background(), sessionID)
	if err != nil {
		t.Fatalf("LoadContext: %v", err)
	}
	return c
}
