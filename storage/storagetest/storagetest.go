// Package storagetest is the conformance suite of storage.Store: one set of
// tests that every backend (SQLite, PostgreSQL) runs unchanged, in the manner
// of litestream's. A backend's test calls Run with a constructor of fresh,
// empty databases.
package storagetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
)

// Opener opens a backend's database. Every call of one Opener opens the same
// database, so that a test can close it and open it again (a restart).
type Opener func(ctx context.Context) (storage.Store, error)

// NewFunc returns the Opener of a fresh, empty database that is removed when
// t ends. The backend takes its time from now (WithClock), so that the suite
// can move time forward (lease expiry) without sleeping.
type NewFunc func(t testing.TB, now func() time.Time) Opener

// Clock is the suite's time: the real time, moved forward by Advance.
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now is the real time plus every Advance so far.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// Run runs the whole suite against the backend newDB makes.
func Run(t *testing.T, newDB NewFunc) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"Threads", testThreads},
		{"RecentThreads", testRecentThreads},
		{"Sessions", testSessions},
		{"EntriesRoundTrip", testEntriesRoundTrip},
		{"EntriesDuplicateSeq", testEntriesDuplicate},
		{"EntriesUnknownSession", testEntriesUnknownSession},
		{"LiveEntries", testLiveEntries},
		{"LiveEntriesInSeqOrder", testLiveEntriesInSeqOrder},
		{"Snapshots", testSnapshots},
		{"SnapshotBehindACompaction", testSnapshotBehindACompaction},
		{"SnapshotGapFilled", testSnapshotGapFilled},
		{"Inbound", testInbound},
		{"InboundTransitions", testInboundTransitions},
		{"DeliveredWithAppend", testDeliveredWithAppend},
		{"Runs", testRuns},
		{"InterruptRuns", testInterruptRuns},
		{"WaitingRuns", testWaitingRuns},
		{"Outbound", testOutbound},
		{"Pushes", testPushes},
		{"Decisions", testDecisions},
		{"Usage", testUsage},
		{"Pages", testPages},
		{"AuthorThreadSummaries", testAuthorThreadSummaries},
		{"ThreadVersion", testThreadVersion},
		{"Events", testEvents},
		{"Openings", testOpenings},
		{"FindActiveThread", testFindActiveThread},
		{"Firings", testFirings},
		{"Ops", testOps},
		{"PendingPosts", testPendingPosts},
		{"RunUsage", testRunUsage},
		{"AuthorSpend", testAuthorSpend},
		{"Leases", testLeases},
		{"LeaseRace", testLeaseRace},
		{"FencedWrites", testFencedWrites},
		{"FencedInterruptRuns", testFencedInterruptRuns},
		{"TakeoverAfterWrites", testTakeoverAfterWrites},
		{"UnownedThreads", testUnownedThreads},
		{"Retention", testRetention},
		{"RetentionLock", testRetentionLock},
		{"ListenInbound", testListenInbound},
		{"ConcurrentAppends", testConcurrentAppends},
		{"ConcurrentAccepts", testConcurrentAccepts},
		{"ConcurrentEnsureThread", testConcurrentEnsureThread},
		{"AcceptInboundInThread", testAcceptInboundInThread},
		{"ConcurrentAcceptInboundInThread", testConcurrentAcceptInboundInThread},
		{"ConcurrentSameSeq", testConcurrentSameSeq},
		{"Reopen", testReopen},
		{"Closed", testClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &suite{t: t, ctx: context.Background(), clock: &Clock{}}
			s.open = newDB(t, s.clock.Now)
			s.db = s.reopen()
			tc.fn(t, s)
		})
	}
}

type suite struct {
	t     *testing.T
	ctx   context.Context
	clock *Clock
	open  Opener
	db    storage.Store
}

// reopen opens the database (again); it is closed when the test ends.
func (s *suite) reopen() storage.Store {
	s.t.Helper()
	db, err := s.open(s.ctx)
	if err != nil {
		s.t.Fatalf("open: %v", err)
	}
	s.t.Cleanup(func() { db.Close() })
	return db
}

func (s *suite) thread(platform, ts string) storage.Thread {
	s.t.Helper()
	th, _, err := s.db.EnsureThread(s.ctx, storage.ThreadKey{Platform: platform, Team: "T1", Channel: "C1", Thread: ts}, storage.ThreadInit{Repo: "r"})
	if err != nil {
		s.t.Fatalf("EnsureThread: %v", err)
	}
	return th
}

func (s *suite) session(th storage.Thread) storage.Session {
	s.t.Helper()
	ss, err := s.db.CreateSession(s.ctx, th.ID, storage.SessionInit{Model: "m1", SystemPrompt: "sys"})
	if err != nil {
		s.t.Fatalf("CreateSession: %v", err)
	}
	return ss
}

func (s *suite) accept(in storage.Inbound) (int64, bool) {
	s.t.Helper()
	if in.Platform == "" {
		in.Platform = "slack"
	}
	if in.Channel == "" {
		in.Channel = "C1"
	}
	if in.Mode == "" {
		in.Mode = storage.ModePrompt
	}
	id, dup, err := s.db.AcceptInbound(s.ctx, in)
	if err != nil {
		s.t.Fatalf("AcceptInbound: %v", err)
	}
	return id, dup
}

func (s *suite) append(sessionID string, es ...transcript.Entry) {
	s.t.Helper()
	if err := s.db.AppendEntries(s.ctx, sessionID, es); err != nil {
		s.t.Fatalf("AppendEntries: %v", err)
	}
}

func (s *suite) load(sessionID string) []transcript.Entry {
	s.t.Helper()
	es, err := s.db.LoadEntries(s.ctx, sessionID)
	if err != nil {
		s.t.Fatalf("LoadEntries: %v", err)
	}
	return es
}

func user(text, inputID string) llm.Message {
	m := llm.UserText(text)
	m.InputID = inputID
	return m
}

func reply(u *llm.Usage) llm.Message {
	return llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonStop, Content: []llm.Content{llm.Text("ok")}, Usage: u}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: %v, want %v", what, err, target)
	}
}

func testThreads(t *testing.T, s *suite) {
	key := storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C1", Thread: "1.0"}
	th, created, err := s.db.EnsureThread(s.ctx, key, storage.ThreadInit{Repo: "r", Branch: "b", WorkspacePath: "/w"})
	if err != nil || !created {
		t.Fatalf("EnsureThread = %v, created %v", err, created)
	}
	if th.ID == 0 || th.Key != key || th.Repo != "r" || th.Branch != "b" || th.WorkspacePath != "/w" || th.State != storage.ThreadActive ||
		th.SessionID != "" || th.CreatedAt.IsZero() || th.ActiveAt.IsZero() {
		t.Errorf("new thread = %+v", th)
	}
	again, created, err := s.db.EnsureThread(s.ctx, key, storage.ThreadInit{Repo: "other"})
	if err != nil || created || again.ID != th.ID || again.Repo != "r" {
		t.Errorf("EnsureThread again = %+v, created %v, %v; want the first, unchanged", again, created, err)
	}
	if _, _, err := s.db.EnsureThread(s.ctx, storage.ThreadKey{Platform: "slack"}, storage.ThreadInit{}); err == nil {
		t.Error("EnsureThread of an incomplete key succeeded")
	}
	dm, _, err := s.db.EnsureThread(s.ctx, storage.ThreadKey{Platform: "slack", Channel: "D1", Thread: "1.0"}, storage.ThreadInit{})
	if err != nil || dm.ID == th.ID {
		t.Errorf("a thread without team: %+v, %v", dm, err)
	}
	got, err := s.db.GetThread(s.ctx, key)
	if err != nil || got.ID != th.ID {
		t.Errorf("GetThread = %+v, %v", got, err)
	}
	_, err = s.db.GetThread(s.ctx, storage.ThreadKey{Platform: "slack", Channel: "C1", Thread: "9"})
	wantErr(t, "GetThread of an unknown key", err, storage.ErrNotFound)
	_, err = s.db.ThreadByID(s.ctx, 99999)
	wantErr(t, "ThreadByID of an unknown id", err, storage.ErrNotFound)

	if err := s.db.SetThreadWorkspace(s.ctx, th.ID, storage.ThreadInit{Repo: "r2", Branch: "b2", WorkspacePath: "/w2"}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "SetThreadWorkspace of an unknown thread", s.db.SetThreadWorkspace(s.ctx, 99999, storage.ThreadInit{}), storage.ErrNotFound)
	if err := s.db.SetThreadState(s.ctx, th.ID, storage.ThreadClosed); err != nil {
		t.Fatal(err)
	}
	if err := s.db.SetThreadState(s.ctx, th.ID, "weird"); err == nil {
		t.Error("SetThreadState accepted an unknown state")
	}
	wantErr(t, "SetThreadState of an unknown thread", s.db.SetThreadState(s.ctx, 99999, storage.ThreadClosed), storage.ErrNotFound)
	// Last seen moves forward only: longer ids are newer, then lexical order.
	for _, id := range []string{"1712345678.000100", "1712345678.000099", "999", "1712345678.000200"} {
		if err := s.db.SetLastSeenMessage(s.ctx, th.ID, id); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.db.SetLastSeenMessage(s.ctx, th.ID, ""); err != nil {
		t.Fatal(err)
	}
	got, err = s.db.ThreadByID(s.ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Repo != "r2" || got.Branch != "b2" || got.WorkspacePath != "/w2" || got.State != storage.ThreadClosed ||
		got.LastSeenMessage != "1712345678.000200" {
		t.Errorf("updated thread = %+v", got)
	}
	active, err := s.db.ActiveThreads(s.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(active) != 1 || active[0].ID != dm.ID {
		t.Errorf("ActiveThreads = %+v, want only the DM (the other is closed)", active)
	}
	// Input accepted in a closed thread makes it active again.
	s.accept(storage.Inbound{ThreadID: th.ID, MessageID: "1712345679.000001", Text: "back"})
	got, _ = s.db.ThreadByID(s.ctx, th.ID)
	if got.State != storage.ThreadActive || got.LastSeenMessage != "1712345679.000001" {
		t.Errorf("after input: state %s, last seen %s; want active and the input's id", got.State, got.LastSeenMessage)
	}
	active, _ = s.db.ActiveThreads(s.ctx)
	if len(active) != 2 || active[0].ID != th.ID || active[1].ID != dm.ID {
		t.Errorf("ActiveThreads = %+v, want both, oldest first", active)
	}
}

func testRecentThreads(t *testing.T, s *suite) {
	a := s.thread("slack", "1.0")
	b := s.thread("slack", "2.0")
	c := s.thread("discord", "3.0")
	closed := s.thread("slack", "4.0")
	if err := s.db.SetThreadState(s.ctx, closed.ID, storage.ThreadClosed); err != nil {
		t.Fatal(err)
	}
	got, err := s.db.RecentThreads(s.ctx, "slack", time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, th := range got {
		ids = append(ids, th.ID)
	}
	if !slices.Equal(ids, []int64{a.ID, b.ID}) {
		t.Errorf("RecentThreads(slack) = %v, want %v (not discord's %d, not the closed %d)", ids, []int64{a.ID, b.ID}, c.ID, closed.ID)
	}
	got, err = s.db.RecentThreads(s.ctx, "slack", time.Now().Add(time.Hour))
	if err != nil || len(got) != 0 {
		t.Errorf("RecentThreads since the future = %+v, %v; want none", got, err)
	}
}

func testSessions(t *testing.T, s *suite) {
	th := s.thread("slack", "1.0")
	first, err := s.db.CreateSession(s.ctx, th.ID, storage.SessionInit{Model: "m1", SystemPrompt: "sys", Settings: json.RawMessage(`{"thinking":"high"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if first.ID == "" || first.ThreadID != th.ID || first.CreatedAt.IsZero() {
		t.Errorf("CreateSession = %+v", first)
	}
	got, err := s.db.GetSession(s.ctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != first.ID || got.Model != "m1" || got.SystemPrompt != "sys" || string(got.Settings) != `{"thinking":"high"}` ||
		!got.CreatedAt.Equal(first.CreatedAt) {
		t.Errorf("GetSession = %+v, want %+v", got, first)
	}
	second, err := s.db.CreateSession(s.ctx, th.ID, storage.SessionInit{Model: "m2"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.db.GetSession(s.ctx, second.ID); got.Settings != nil {
		t.Errorf("a session without settings has %q", got.Settings)
	}
	cur, _ := s.db.ThreadByID(s.ctx, th.ID)
	if cur.SessionID != second.ID {
		t.Errorf("thread's session = %q, want the newest %q", cur.SessionID, second.ID)
	}
	if err := s.db.SetSessionModel(s.ctx, first.ID, "m3"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.db.GetSession(s.ctx, first.ID); got.Model != "m3" {
		t.Errorf("model after SetSessionModel = %q", got.Model)
	}
	wantErr(t, "SetSessionModel of an unknown session", s.db.SetSessionModel(s.ctx, "nope", "m"), storage.ErrNotFound)
	_, err = s.db.GetSession(s.ctx, "nope")
	wantErr(t, "GetSession of an unknown id", err, storage.ErrNotFound)
	_, err = s.db.CreateSession(s.ctx, 99999, storage.SessionInit{})
	wantErr(t, "CreateSession on an unknown thread", err, storage.ErrNotFound)
	if _, err := s.db.CreateSession(s.ctx, th.ID, storage.SessionInit{Settings: json.RawMessage(`{`)}); err == nil {
		t.Error("CreateSession took settings that are not JSON")
	}
	all, err := s.db.ThreadSessions(s.ctx, th.ID)
	if err != nil || len(all) != 2 || all[0].ID != first.ID || all[1].ID != second.ID {
		t.Errorf("ThreadSessions = %+v, %v; want both, oldest first", all, err)
	}
}

// everyType is one entry of each kind the store knows, and one it does not.
func everyType() []transcript.Entry {
	exit := 1
	return []transcript.Entry{
		transcript.MessageEntry(0, llm.Message{Role: llm.RoleUser, Timestamp: 1, InputID: "17",
			Content: []llm.Content{llm.Text("look at this ✓ \"quoted\" \\ <tag>"), llm.Image("image/png", "iVBORw0KGgo=")}}),
		transcript.MessageEntry(1, llm.Message{Role: llm.RoleAssistant, Timestamp: 2, StopReason: llm.StopReasonError,
			ErrorMessage: "429", ErrorInfo: &llm.Error{Kind: llm.ErrorHTTP, StatusCode: 429, Code: "rate_limit_exceeded", Message: "slow down", RetryAfter: 2e9}}),
		transcript.MessageEntry(2, llm.Message{Role: llm.RoleAssistant, Timestamp: 3, Provider: "openai", Model: "gpt-4.1",
			Usage:      &llm.Usage{Input: 10, Output: 5, CacheRead: 2, CacheWrite: 1, TotalTokens: 18},
			StopReason: llm.StopReasonToolUse,
			Content: []llm.Content{{Type: llm.ContentThinking, Thinking: "hmm"}, llm.Text("reading"),
				llm.ToolCall("c1", "read", json.RawMessage(`{"path":"a.go"}`))}}),
		transcript.MessageEntry(3, llm.Message{Role: llm.RoleToolResult, Timestamp: 4, ToolCallID: "c1", ToolName: "read",
			IsError: true, Details: json.RawMessage(`{"truncated":true}`), Content: []llm.Content{llm.Text("no such file")}}),
		transcript.MessageEntry(4, llm.Message{Role: llm.RoleCustom, CustomType: "thread_context", Display: true,
			Content: []llm.Content{llm.Text("earlier: alice said « salut » 👋 and \"hi\"\tthere")}}),
		transcript.MessageEntry(5, llm.Message{Role: llm.RoleBashExecution, Bash: &llm.BashExecution{Command: "ls", Output: "a.go", ExitCode: &exit}}),
		{Seq: 6, Type: transcript.EntryCompaction, Timestamp: 7, Compaction: &transcript.Compaction{Summary: "## Goal\nfix it",
			FirstKeptSeq: 3, TokensBefore: 123456, ReadFiles: []string{"a.go"}, ModifiedFiles: []string{"b.go"}, Reason: "overflow"}},
		{Seq: 7, Type: transcript.EntryModelChange, Timestamp: 8, ModelChange: &transcript.ModelChange{Provider: "openai", Model: "o3"}},
		{Seq: 8, Type: transcript.EntryThinkingLevel, Timestamp: 9, ThinkingLevel: "high"},
		{Seq: 9, Type: transcript.EntryCustom, Timestamp: 10, Custom: &transcript.Custom{Kind: "label", Data: json.RawMessage(`{"x":[1,2]}`)}},
		// A type from a newer version: carried along byte for byte.
		{Seq: 10, Type: "branch_summary", Timestamp: 11, Raw: json.RawMessage(`{"type":"branch_summary",  "summary":"s","fromId":"x"}`)},
	}
}

func testEntriesRoundTrip(t *testing.T, s *suite) {
	ss := s.session(s.thread("slack", "1.0"))
	if n, err := s.db.NextSeq(s.ctx, ss.ID); err != nil || n != 0 {
		t.Errorf("NextSeq of an empty session = %d, %v; want 0", n, err)
	}
	entries := everyType()
	// One call per entry, as the agent appends, then a batch.
	for _, e := range entries[:4] {
		s.append(ss.ID, e)
	}
	s.append(ss.ID, entries[4:]...)
	if err := s.db.AppendEntries(s.ctx, ss.ID, nil); err != nil {
		t.Errorf("an empty append: %v", err)
	}
	loaded := s.load(ss.ID)
	got := transcript.WithoutUnits(loaded)
	if len(got) != len(entries) {
		t.Fatalf("loaded %d entries, want %d", len(got), len(entries))
	}
	// A loaded text carries its UTF-16 length from decoding, and it is right:
	// estimating a resumed context reads no text.
	for i := range loaded {
		m := loaded[i].Message
		if m == nil {
			continue
		}
		for j := range m.Content {
			c := &m.Content[j]
			if c.Text == "" && c.Thinking == "" {
				continue
			}
			if reflect.DeepEqual(c, &got[i].Message.Content[j]) {
				t.Errorf("entry %d, block %d: loaded without its text's length", i, j)
			}
			if c.TextUnits() != llm.UTF16Len(c.Text) || c.ThinkingUnits() != llm.UTF16Len(c.Thinking) {
				t.Errorf("entry %d, block %d: carried lengths %d, %d; the texts have %d, %d", i, j,
					c.TextUnits(), c.ThinkingUnits(), llm.UTF16Len(c.Text), llm.UTF16Len(c.Thinking))
			}
		}
	}
	for i := range entries {
		if !reflect.DeepEqual(got[i], entries[i]) {
			t.Errorf("entry %d:\n got  %+v\n want %+v", i, got[i], entries[i])
		}
	}
	if n, err := s.db.NextSeq(s.ctx, ss.ID); err != nil || n != int64(len(entries)) {
		t.Errorf("NextSeq = %d, %v; want %d", n, err, len(entries))
	}
	// Order is by seq, never by arrival; gaps are allowed.
	other := s.session(s.thread("slack", "2.0"))
	s.append(other.ID, transcript.MessageEntry(7, llm.UserText("c")))
	s.append(other.ID, transcript.MessageEntry(2, llm.UserText("a")), transcript.MessageEntry(5, llm.UserText("b")))
	var seqs []int64
	for _, e := range s.load(other.ID) {
		seqs = append(seqs, e.Seq)
	}
	if !slices.Equal(seqs, []int64{2, 5, 7}) {
		t.Errorf("seqs = %v, want [2 5 7]", seqs)
	}
	if n, _ := s.db.NextSeq(s.ctx, other.ID); n != 8 {
		t.Errorf("NextSeq after a gap = %d, want 8", n)
	}
	// Invalid entries are refused before anything is stored.
	if err := s.db.AppendEntries(s.ctx, other.ID, []transcript.Entry{transcript.MessageEntry(9, llm.UserText("x")), {Seq: -1, Type: "message"}}); err == nil {
		t.Error("a negative seq was accepted")
	}
	if err := s.db.AppendEntries(s.ctx, other.ID, []transcript.Entry{{Seq: 10, Type: transcript.EntryMessage}}); err == nil {
		t.Error("a message entry without its message was accepted")
	}
	if n := len(s.load(other.ID)); n != 3 {
		t.Errorf("%d entries after refused appends, want 3", n)
	}
}

func testEntriesDuplicate(t *testing.T, s *suite) {
	ss := s.session(s.thread("slack", "1.0"))
	s.append(ss.ID, transcript.MessageEntry(0, llm.UserText("a")), transcript.MessageEntry(1, llm.UserText("b")))
	err := s.db.AppendEntries(s.ctx, ss.ID, []transcript.Entry{transcript.MessageEntry(2, llm.UserText("c")), transcript.MessageEntry(1, llm.UserText("dup"))})
	var de *storage.DuplicateEntryError
	if !errors.As(err, &de) || !errors.Is(err, storage.ErrDuplicateEntry) || de.Seq != 1 || de.SessionID != ss.ID {
		t.Fatalf("append over seq 1 = %v, want a DuplicateEntryError for seq 1 of %s", err, ss.ID)
	}
	got := s.load(ss.ID)
	if len(got) != 2 || got[1].Message.TextContent() != "b" {
		t.Errorf("after the refused append: %d entries (seq 2 must not be stored, seq 1 unchanged)", len(got))
	}
	// Twice the same seq in one call is a duplicate too.
	err = s.db.AppendEntries(s.ctx, ss.ID, []transcript.Entry{transcript.MessageEntry(5, llm.UserText("x")), transcript.MessageEntry(5, llm.UserText("y"))})
	if !errors.As(err, &de) || de.Seq != 5 {
		t.Errorf("one call with seq 5 twice = %v, want a DuplicateEntryError for seq 5", err)
	}
	if n, _ := s.db.NextSeq(s.ctx, ss.ID); n != 2 {
		t.Errorf("NextSeq = %d, want 2", n)
	}
	// Appending what is stored already, identical, succeeds without writing:
	// the caller retries an append whose commit it did not see (the
	// connection dropped), and must neither fail nor store it twice.
	th2 := s.thread("slack", "2.0")
	ss2 := s.session(th2)
	in, _ := s.accept(storage.Inbound{ThreadID: th2.ID, MessageID: "2.1", Text: "hi"})
	batch := []transcript.Entry{transcript.MessageEntry(0, user("hi", strconv.FormatInt(in, 10))), transcript.MessageEntry(1, llm.UserText("b"))}
	batch[0].Timestamp, batch[1].Timestamp = 1700000000000, 1700000000001
	s.append(ss2.ID, batch...)
	if err := s.db.AppendEntries(s.ctx, ss2.ID, batch); err != nil {
		t.Errorf("appending the same entries again = %v, want nil", err)
	}
	if got := s.load(ss2.ID); len(got) != 2 {
		t.Errorf("after the repeated append: %d entries, want 2", len(got))
	}
	changed := slices.Clone(batch)
	changed[1] = transcript.MessageEntry(1, llm.UserText("B"))
	changed[1].Timestamp = batch[1].Timestamp
	if err := s.db.AppendEntries(s.ctx, ss2.ID, changed); !errors.As(err, &de) || de.Seq != 0 {
		t.Errorf("an append over stored seqs with other content = %v, want a DuplicateEntryError", err)
	}
	if err := s.db.AppendEntries(s.ctx, ss2.ID, batch[1:]); err != nil {
		t.Errorf("repeating the tail of an append = %v, want nil", err)
	}
}

func testEntriesUnknownSession(t *testing.T, s *suite) {
	err := s.db.AppendEntries(s.ctx, "nope", []transcript.Entry{transcript.MessageEntry(0, llm.UserText("a"))})
	wantErr(t, "AppendEntries to an unknown session", err, storage.ErrNotFound)
	_, err = s.db.LoadEntries(s.ctx, "nope")
	wantErr(t, "LoadEntries of an unknown session", err, storage.ErrNotFound)
	_, err = s.db.LoadLiveEntries(s.ctx, "nope")
	wantErr(t, "LoadLiveEntries of an unknown session", err, storage.ErrNotFound)
	_, err = s.db.NextSeq(s.ctx, "nope")
	wantErr(t, "NextSeq of an unknown session", err, storage.ErrNotFound)
	ss := s.session(s.thread("slack", "1.0"))
	if es := s.load(ss.ID); len(es) != 0 {
		t.Errorf("a new session has %d entries", len(es))
	}
}

func testLiveEntries(t *testing.T, s *suite) {
	ss := s.session(s.thread("slack", "1.0"))
	var es []transcript.Entry
	es = append(es, transcript.Entry{Seq: 0, Type: transcript.EntryModelChange, ModelChange: &transcript.ModelChange{Provider: "p", Model: "old"}})
	for i := 1; i <= 6; i++ {
		es = append(es, transcript.MessageEntry(int64(i), llm.UserText(string(rune('a'+i)))))
	}
	es = append(es, transcript.Entry{Seq: 7, Type: transcript.EntryThinkingLevel, ThinkingLevel: "low"})
	es = append(es, transcript.Entry{Seq: 8, Type: transcript.EntryCompaction, Compaction: &transcript.Compaction{Summary: "S1", FirstKeptSeq: 3}})
	es = append(es, transcript.MessageEntry(9, llm.UserText("j")))
	es = append(es, transcript.Entry{Seq: 10, Type: transcript.EntryCompaction, Compaction: &transcript.Compaction{Summary: "S2", FirstKeptSeq: 9}})
	es = append(es, transcript.MessageEntry(11, llm.UserText("l")))
	for _, e := range es {
		s.append(ss.ID, e)
	}
	live, err := s.db.LoadLiveEntries(s.ctx, ss.ID)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, e := range live {
		seqs = append(seqs, e.Seq)
	}
	if want := []int64{0, 7, 9, 10, 11}; !slices.Equal(seqs, want) {
		t.Errorf("live seqs = %v, want %v", seqs, want)
	}
	c, err := s.db.LoadContext(s.ctx, ss.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := transcript.BuildContext(s.load(ss.ID)); !reflect.DeepEqual(c, want) {
		t.Errorf("LoadContext = %+v\nwant BuildContext(LoadEntries) = %+v", c, want)
	}
}

// The settings kept from before the latest compaction come back in Seq
// order whatever their types, ahead of the kept entries.
func testLiveEntriesInSeqOrder(t *testing.T, s *suite) {
	ss := s.session(s.thread("slack", "1.0"))
	s.append(ss.ID,
		transcript.MessageEntry(0, llm.UserText("a")),
		transcript.Entry{Seq: 1, Type: transcript.EntryThinkingLevel, ThinkingLevel: "low"},
		transcript.Entry{Seq: 2, Type: transcript.EntryModelChange, ModelChange: &transcript.ModelChange{Model: "m2"}},
		transcript.Entry{Seq: 3, Type: transcript.EntryThinkingLevel, ThinkingLevel: "high"},
		transcript.MessageEntry(4, llm.UserText("e")),
		transcript.Entry{Seq: 5, Type: transcript.EntryModelChange, ModelChange: &transcript.ModelChange{Model: "m5"}},
		transcript.MessageEntry(6, llm.UserText("g")),
		transcript.Entry{Seq: 7, Type: transcript.EntryCompaction, Compaction: &transcript.Compaction{Summary: "S", FirstKeptSeq: 6}},
		transcript.MessageEntry(8, llm.UserText("i")),
	)
	live, err := s.db.LoadLiveEntries(s.ctx, ss.ID)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []int64
	for _, e := range live {
		seqs = append(seqs, e.Seq)
	}
	if want := []int64{1, 2, 3, 5, 6, 7, 8}; !slices.Equal(seqs, want) {
		t.Errorf("live seqs = %v, want %v", seqs, want)
	}
	c := transcript.BuildContext(live)
	if c.Model != "m5" || c.ThinkingLevel != "high" {
		t.Errorf("context from the live entries: model %q, thinking %q; want m5, high", c.Model, c.ThinkingLevel)
	}
}

func testInbound(t *testing.T, s *suite) {
	th := s.thread("slack", "1.0")
	in := storage.Inbound{Platform: "slack", EventID: "Ev1", Channel: "C1", MessageID: "1.1", ThreadID: th.ID, AuthorID: "U1",
		AuthorName: "alice", AuthorEmail: "a@x", Text: "hi ✓", Attachments: json.RawMessage(`[{"name":"a.png"}]`), Mode: storage.ModePrompt}
	id, dup := s.accept(in)
	if dup || id == 0 {
		t.Fatalf("first accept: id %d, duplicate %v", id, dup)
	}
	// The same mention under another event id (Slack's app_mention and message).
	if id2, dup := s.accept(storage.Inbound{EventID: "Ev2", MessageID: "1.1", ThreadID: th.ID, Text: "hi"}); !dup || id2 != id {
		t.Errorf("same message id: id %d duplicate %v, want %d true", id2, dup, id)
	}
	// A redelivered event.
	if id3, dup := s.accept(storage.Inbound{EventID: "Ev1", MessageID: "1.9", ThreadID: th.ID}); !dup || id3 != id {
		t.Errorf("same event id: id %d duplicate %v, want %d true", id3, dup, id)
	}
	// Same message id on another platform or channel is another message; no ids at all never collide.
	other, dup := s.accept(storage.Inbound{Platform: "discord", MessageID: "1.1", ThreadID: th.ID})
	if dup || other == id {
		t.Errorf("another platform's message was taken for a duplicate")
	}
	n1, _ := s.accept(storage.Inbound{ThreadID: th.ID, Mode: storage.ModeSteer})
	n2, dup := s.accept(storage.Inbound{ThreadID: th.ID, Mode: storage.ModeFollowUp})
	if dup || n1 == n2 {
		t.Errorf("two messages without ids were taken for one")
	}
	got, err := s.db.GetInbound(s.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	in.ID, in.State = id, storage.InboundReceived
	in.ReceivedAt, in.UpdatedAt = got.ReceivedAt, got.UpdatedAt
	if !reflect.DeepEqual(got, in) || got.ReceivedAt.IsZero() {
		t.Errorf("GetInbound =\n %+v\nwant\n %+v", got, in)
	}
	_, err = s.db.GetInbound(s.ctx, 99999)
	wantErr(t, "GetInbound of an unknown id", err, storage.ErrNotFound)
	_, _, err = s.db.AcceptInbound(s.ctx, storage.Inbound{Platform: "slack", Channel: "C1", ThreadID: 99999, Mode: storage.ModePrompt})
	wantErr(t, "AcceptInbound in an unknown thread", err, storage.ErrNotFound)
	for _, bad := range []storage.Inbound{
		{Channel: "C1", ThreadID: th.ID, Mode: storage.ModePrompt},
		{Platform: "slack", Channel: "C1", ThreadID: th.ID, Mode: "shout"},
		{Platform: "slack", Channel: "C1", ThreadID: th.ID, Mode: storage.ModePrompt, Attachments: json.RawMessage(`{`)},
	} {
		if _, _, err := s.db.AcceptInbound(s.ctx, bad); err == nil {
			t.Errorf("AcceptInbound(%+v) succeeded", bad)
		}
	}
	pending, err := s.db.PendingInbound(s.ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, p := range pending {
		ids = append(ids, p.ID)
	}
	if !slices.Equal(ids, []int64{id, other, n1, n2}) {
		t.Errorf("PendingInbound = %v, want arrival order %v", ids, []int64{id, other, n1, n2})
	}
	all, err := s.db.ThreadInbound(s.ctx, th.ID)
	if err != nil || len(all) != 4 {
		t.Errorf("ThreadInbound = %d, %v; want 4", len(all), err)
	}
	// Whatever bytes a person sends are stored, not refused (a refusal
	// would have the platform redeliver the message forever). PostgreSQL
	// keeps neither NUL nor invalid UTF-8: each may become U+FFFD.
	odd := "a\x00b\xffc"
	oid, _ := s.accept(storage.Inbound{ThreadID: th.ID, MessageID: "odd", Text: odd, AuthorName: odd})
	if got, err := s.db.GetInbound(s.ctx, oid); err != nil || (got.Text != odd && got.Text != "a\uFFFDb\uFFFDc") {
		t.Errorf("text with NUL and invalid UTF-8 came back as %q, %v", got.Text, err)
	}
	if _, err := s.db.RecordOutbound(s.ctx, storage.Outbound{ThreadID: th.ID, Kind: storage.OutboundAnswer, Channel: "C1", MessageID: "odd", Text: odd}); err != nil {
		t.Errorf("an outbound text with NUL and invalid UTF-8: %v", err)
	}
}

func testInboundTransitions(t *testing.T, s *suite) {
	th := s.thread("slack", "1.0")
	a, _ := s.accept(storage.Inbound{ThreadID: th.ID, MessageID: "1"})
	b, _ := s.accept(storage.Inbound{ThreadID: th.ID, MessageID: "2"})
	c, _ := s.accept(storage.Inbound{ThreadID: th.ID, MessageID: "3"})
	other := s.thread("slack", "2.0")
	d, _ := s.accept(storage.Inbound{ThreadID: other.ID, MessageID: "4"})
	must := func(id int64, st storage.InboundState, detail string) {
		t.Helper()
		if err := s.db.MarkInbound(s.ctx, id, st, detail); err != nil {
			t.Fatalf("MarkInbound(%d, %s, %q): %v", id, st, detail, err)
		}
	}
	must(a, storage.InboundQueued, "steer")
	must(a, storage.InboundQueued, "followUp") // re-queued
	must(b, storage.InboundDelivered, "")
	must(c, storage.InboundDropped, "stopped")
	got, _ := s.db.GetInbound(s.ctx, a)
	if got.State != storage.InboundQueued || got.Queue != storage.QueueFollowUp {
		t.Errorf("a = %s in %q, want queued in followUp", got.State, got.Queue)
	}
	must(a, storage.InboundDelivered, "")
	got, _ = s.db.GetInbound(s.ctx, a)
	if got.State != storage.InboundDelivered || got.Queue != storage.QueueFollowUp {
		t.Errorf("a = %s in %q, want delivered, the queue kept as history", got.State, got.Queue)
	}
	if got, _ := s.db.GetInbound(s.ctx, c); got.Reason != "stopped" {
		t.Errorf("dropped reason = %q", got.Reason)
	}
	wantErr(t, "delivered → dropped", s.db.MarkInbound(s.ctx, b, storage.InboundDropped, "late"), storage.ErrInvalidTransition)
	wantErr(t, "dropped → delivered", s.db.MarkInbound(s.ctx, c, storage.InboundDelivered, ""), storage.ErrInvalidTransition)
	wantErr(t, "→ received", s.db.MarkInbound(s.ctx, d, storage.InboundReceived, ""), storage.ErrInvalidTransition)
	wantErr(t, "unknown id", s.db.MarkInbound(s.ctx, 99999, storage.InboundDelivered, ""), storage.ErrNotFound)
	if err := s.db.MarkInbound(s.ctx, d, storage.InboundQueued, "elsewhere"); err == nil {
		t.Error("queued in an unknown queue")
	}
	if err := s.db.MarkInbound(s.ctx, d, storage.InboundDropped, ""); err == nil {
		t.Error("dropped without a reason")
	}
	all, err := s.db.AllPendingInbound(s.ctx)
	if err != nil || len(all) != 1 || all[0].ID != d {
		t.Errorf("AllPendingInbound = %+v, %v; want only %d", all, err, d)
	}
}

// A user message carrying an InputID delivers that input in the same
// transaction that stores it: only the session's own thread's, only while
// pending; a refused append delivers nothing.
func testDeliveredWithAppend(t *testing.T, s *suite) {
	th := s.thread("slack", "1.0")
	other := s.thread("slack", "2.0")
	ss := s.session(th)
	mine, _ := s.accept(storage.Inbound{ThreadID: th.ID, MessageID: "1"})
	queued, _ := s.accept(storage.Inbound{ThreadID: th.ID, MessageID: "2"})
	dropped, _ := s.accept(storage.Inbound{ThreadID: th.ID, MessageID: "3"})
	theirs, _ := s.accept(storage.Inbound{ThreadID: other.ID, MessageID: "4"})
	refused, _ := s.accept(storage.Inbound{ThreadID: th.ID, MessageID: "5"})
	if err := s.db.MarkInbound(s.ctx, queued, storage.InboundQueued, "steer"); err != nil {
		t.Fatal(err)
	}
	if err := s.db.MarkInbound(s.ctx, dropped, storage.InboundDropped, "reset"); err != nil {
		t.Fatal(err)
	}
	// Stored, not yet appended: still pending, so a restart replays it.
	if got, err := s.db.GetInbound(s.ctx, mine); err != nil || got.State != storage.InboundReceived {
		t.Fatalf("inbound before its append = %+v, %v; want received", got, err)
	}
	id := func(v int64) string { return strconv.FormatInt(v, 10) }
	s.append(ss.ID, transcript.MessageEntry(0, user("a", id(mine))), transcript.MessageEntry(1, user("b", id(queued))),
		transcript.MessageEntry(2, user("c", id(dropped))), transcript.MessageEntry(3, user("d", id(theirs))),
		transcript.MessageEntry(4, reply(nil)))
	err := s.db.AppendEntries(s.ctx, ss.ID, []transcript.Entry{transcript.MessageEntry(5, user("e", id(refused))), transcript.MessageEntry(4, reply(nil))})
	wantErr(t, "append over seq 4", err, storage.ErrDuplicateEntry)
	for _, c := range []struct {
		id   int64
		want storage.InboundState
	}{{mine, storage.InboundDelivered}, {queued, storage.InboundDelivered}, {dropped, storage.InboundDropped},
		{theirs, storage.InboundReceived}, {refused, storage.InboundReceived}} {
		got, err := s.db.GetInbound(s.ctx, c.id)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != c.want {
			t.Errorf("inbound %d: %s, want %s", c.id, got.State, c.want)
		}
	}
	// What the refused append would have delivered is delivered by the
	// append that stores it; then nothing of the thread is pending.
	s.append(ss.ID, transcript.MessageEntry(5, user("e", id(refused))))
	if pending, err := s.db.PendingInbound(s.ctx, th.ID); err != nil || len(pending) != 0 {
		t.Errorf("pending input of the thread = %+v, %v; want none", pending, err)
	}
}

func testRuns(t *testing.T, s *suite) {
	th := s.thread("slack", "1.0")
	ss := s.session(th)
	in, _ := s.accept(storage.Inbound{ThreadID: th.ID, MessageID: "1"})
	run, err := s.db.StartRun(s.ctx, th.ID, ss.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.db.GetRun(s.ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != run || got.ThreadID != th.ID || got.Thread != th.Key || got.SessionID != ss.ID || got.InboundID != in ||
		got.StartedAt.IsZero() || !got.EndedAt.IsZero() || got.Outcome != "" {
		t.Errorf("running run = %+v", got)
	}
	bare, err := s.db.StartRun(s.ctx, th.ID, ss.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.FinishRun(s.ctx, run, storage.RunDone); err != nil {
		t.Fatal(err)
	}
	got, _ = s.db.GetRun(s.ctx, run)
	if got.Outcome != storage.RunDone || got.EndedAt.IsZero() {
		t.Errorf("finished run = %+v", got)
	}
	wantErr(t, "FinishRun twice", s.db.FinishRun(s.ctx, run, storage.RunFailed), storage.ErrRunEnded)
	wantErr(t, "FinishRun of an unknown run", s.db.FinishRun(s.ctx, 99999, storage.RunDone), storage.ErrNotFound)
	if err := s.db.FinishRun(s.ctx, bare, ""); err == nil {
		t.Error("FinishRun without an outcome")
	}
	_, err = s.db.GetRun(s.ctx, 99999)
	wantErr(t, "GetRun of an unknown run", err, storage.ErrNotFound)
	_, err = s.db.StartRun(s.ctx, th.ID, "nope", 0)
	wantErr(t, "StartRun of an unknown session", err, storage.ErrNotFound)
	_, err = s.db.StartRun(s.ctx, th.ID, ss.ID, 99999)
	wantErr(t, "StartRun of an unknown inbound", err, storage.ErrNotFound)
	runs, err := s.db.ThreadRuns(s.ctx, th.ID)
	if err != nil || len(runs) != 2 || runs[0].ID != run || runs[1].ID != bare || runs[1].InboundID != 0 {
		t.Errorf("ThreadRuns = %+v, %v", runs, err)
	}
}

func testInterruptRuns(t *testing.T, s *suite) {
	a := s.thread("slack", "1.0")
	b := s.thread("discord", "2.0")
	sa, sb := s.session(a), s.session(b)
	r1, _ := s.db.StartRun(s.ctx, a.ID, sa.ID, 0)
	r2, _ := s.db.StartRun(s.ctx, b.ID, sb.ID, 0)
	r3, _ := s.db.StartRun(s.ctx, a.ID, sa.ID, 0)
	if err := s.db.FinishRun(s.ctx, r2, storage.RunStopped); err != nil {
		t.Fatal(err)
	}
	// A restart: the runs in progress were cut off.
	s.db.Close()
	s.db = s.reopen()
	runs, err := s.db.InterruptRuns(s.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].ID != r1 || runs[1].ID != r3 {
		t.Fatalf("InterruptRuns = %+v, want %d and %d", runs, r1, r3)
	}
	for _, r := range runs {
		if r.Outcome != storage.RunInterrupted || r.EndedAt.IsZero() || r.Thread != a.Key || r.SessionID != sa.ID {
			t.Errorf("interrupted run = %+v", r)
		}
	}
	if got, _ := s.db.GetRun(s.ctx, r2); got.Outcome != storage.RunStopped {
		t.Errorf("a finished run became %s", got.Outcome)
	}
	if runs, err := s.db.InterruptRuns(s.ctx); err != nil || len(runs) != 0 {
		t.Errorf("InterruptRuns again = %+v, %v; want none", runs, err)
	}
	wantErr(t, "FinishRun of an interrupted run", s.db.FinishRun(s.ctx, r1, storage.RunDone), storage.ErrRunEnded)
}

// WaitingRuns are the runs that ended waiting for the model and have no run
// after them in their thread: a later run of the thread answered the input.
func testWaitingRuns(t *testing.T, s *suite) {
	a := s.thread("slack", "1.0")
	b := s.thread("discord", "2.0")
	c := s.thread("slack", "3.0")
	sa, sb, sc := s.session(a), s.session(b), s.session(c)
	run := func(th storage.Thread, ss storage.Session, outcome storage.RunOutcome) int64 {
		id, err := s.db.StartRun(s.ctx, th.ID, ss.ID, 0)
		if err != nil {
			t.Fatal(err)
		}
		if outcome != "" {
			if err := s.db.FinishRun(s.ctx, id, outcome); err != nil {
				t.Fatal(err)
			}
		}
		return id
	}
	run(a, sa, storage.RunDone)
	wa := run(a, sa, storage.RunWaiting) // a waits
	run(b, sb, storage.RunWaiting)
	run(b, sb, storage.RunDone) // b's input was answered after
	wc := run(c, sc, storage.RunWaiting)
	if runs, err := s.db.WaitingRuns(s.ctx); err != nil || len(runs) != 2 || runs[0].ID != wa || runs[1].ID != wc ||
		runs[0].Thread != a.Key || runs[1].Thread != c.Key || runs[0].Outcome != storage.RunWaiting {
		t.Fatalf("WaitingRuns = %+v, %v; want %d and %d", runs, err, wa, wc)
	}
	run(c, sc, "") // c's next run began
	if runs, err := s.db.WaitingRuns(s.ctx); err != nil || len(runs) != 1 || runs[0].ID != wa {
		t.Errorf("WaitingRuns after c's next run = %+v, %v; want %d", runs, err, wa)
	}
}

// Under a lease, InterruptRuns is the new owner's: it ends the runs of the
// lease's thread only (another thread's run may be another replica's, alive),
// and a stale owner's call ends nothing.
func testFencedInterruptRuns(t *testing.T, s *suite) {
	const ttl = 30 * time.Second
	a, b := s.thread("slack", "1.0"), s.thread("slack", "2.0")
	sa, sb := s.session(a), s.session(b)
	ra, _ := s.db.StartRun(s.ctx, a.ID, sa.ID, 0)
	rb, _ := s.db.StartRun(s.ctx, b.ID, sb.ID, 0)
	old, _ := s.acquire(a.ID, "replica-a", ttl)
	s.clock.Advance(ttl + time.Second) // replica-a died holding thread a
	cur, ok := s.acquire(a.ID, "replica-b", ttl)
	if !ok {
		t.Fatal("the takeover failed")
	}
	_, err := s.db.InterruptRuns(storage.WithLease(s.ctx, old))
	wantErr(t, "the stale owner's InterruptRuns", err, storage.ErrFenced)
	if r, _ := s.db.GetRun(s.ctx, ra); r.Outcome != "" {
		t.Errorf("the stale owner's InterruptRuns ended run %d: %s", ra, r.Outcome)
	}
	runs, err := s.db.InterruptRuns(storage.WithLease(s.ctx, cur))
	if err != nil || len(runs) != 1 || runs[0].ID != ra || runs[0].Outcome != storage.RunInterrupted {
		t.Fatalf("the owner's InterruptRuns = %+v, %v; want run %d interrupted", runs, err, ra)
	}
	if r, _ := s.db.GetRun(s.ctx, rb); r.Outcome != "" {
		t.Errorf("InterruptRuns under thread %d's lease ended thread %d's run: %s", a.ID, b.ID, r.Outcome)
	}
	// Without a lease (a lone process's start), every run in progress.
	if runs, err := s.db.InterruptRuns(s.ctx); err != nil || len(runs) != 1 || runs[0].ID != rb {
		t.Errorf("InterruptRuns without a lease = %+v, %v; want run %d", runs, err, rb)
	}
}

func testOutbound(t *testing.T, s *suite) {
	th := s.thread("slack", "1.0")
	ss := s.session(th)
	run, _ := s.db.StartRun(s.ctx, th.ID, ss.ID, 0)
	st, err := s.db.RecordOutbound(s.ctx, storage.Outbound{ThreadID: th.ID, RunID: run, Kind: storage.OutboundStatus, Channel: "C1", MessageID: "9.1", Text: "working"})
	if err != nil {
		t.Fatal(err)
	}
	ans, err := s.db.RecordOutbound(s.ctx, storage.Outbound{ThreadID: th.ID, RunID: run, Kind: storage.OutboundAnswer, Channel: "C1", MessageID: "9.2", Text: "done"})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := s.db.RecordOutbound(s.ctx, storage.Outbound{ThreadID: th.ID, Kind: storage.OutboundAck, Channel: "C1", MessageID: "9.3"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.UpdateOutbound(s.ctx, st, "✓ done"); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "UpdateOutbound of an unknown id", s.db.UpdateOutbound(s.ctx, 99999, "x"), storage.ErrNotFound)
	for _, bad := range []storage.Outbound{
		{ThreadID: th.ID, Kind: "shout", Channel: "C1", MessageID: "1"},
		{ThreadID: th.ID, Kind: storage.OutboundAck, MessageID: "1"},
		{ThreadID: th.ID, Kind: storage.OutboundAck, Channel: "C1"},
	} {
		if _, err := s.db.RecordOutbound(s.ctx, bad); err == nil {
			t.Errorf("RecordOutbound(%+v) succeeded", bad)
		}
	}
	_, err = s.db.RecordOutbound(s.ctx, storage.Outbound{ThreadID: 99999, Kind: storage.OutboundAck, Channel: "C1", MessageID: "1"})
	wantErr(t, "RecordOutbound in an unknown thread", err, storage.ErrNotFound)
	got, err := s.db.OutboundForRun(s.ctx, run)
	if err != nil || len(got) != 2 || got[0].ID != st || got[1].ID != ans || got[0].Text != "✓ done" || got[0].Kind != storage.OutboundStatus ||
		got[0].RunID != run || got[0].MessageID != "9.1" || got[0].CreatedAt.IsZero() {
		t.Errorf("OutboundForRun = %+v, %v", got, err)
	}
	last, err := s.db.LastOutbound(s.ctx, th.ID, storage.OutboundAck)
	if err != nil || last.ID != ack || last.RunID != 0 {
		t.Errorf("LastOutbound(ack) = %+v, %v", last, err)
	}
	_, err = s.db.LastOutbound(s.ctx, th.ID, storage.OutboundNotice)
	wantErr(t, "LastOutbound of a kind never posted", err, storage.ErrNotFound)
}

func testPushes(t *testing.T, s *suite) {
	th := s.thread("slack", "1.0")
	_, err := s.db.LastPush(s.ctx, th.ID)
	wantErr(t, "LastPush before any", err, storage.ErrNotFound)
	p1, err := s.db.RecordPush(s.ctx, storage.Push{ThreadID: th.ID, Branch: "ts/a", SHA: "abc", Result: storage.PushOK})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := s.db.RecordPush(s.ctx, storage.Push{ThreadID: th.ID, Branch: "ts/a", SHA: "def", Result: storage.PushRejected, Detail: "non-fast-forward"})
	if err != nil {
		t.Fatal(err)
	}
	last, err := s.db.LastPush(s.ctx, th.ID)
	if err != nil || last.ID != p2 || last.SHA != "def" || last.Result != storage.PushRejected || last.Detail != "non-fast-forward" || last.At.IsZero() {
		t.Errorf("LastPush = %+v, %v", last, err)
	}
	all, err := s.db.ThreadPushes(s.ctx, th.ID)
	if err != nil || len(all) != 2 || all[0].ID != p1 || all[1].ID != p2 {
		t.Errorf("ThreadPushes = %+v, %v", all, err)
	}
	if _, err := s.db.RecordPush(s.ctx, storage.Push{ThreadID: th.ID, Branch: "b", Result: "maybe"}); err == nil {
		t.Error("RecordPush of an unknown result")
	}
	if _, err := s.db.RecordPush(s.ctx, storage.Push{ThreadID: th.ID, Result: storage.PushOK}); err == nil {
		t.Error("RecordPush without a branch")
	}
	_, err = s.db.RecordPush(s.ctx, storage.Push{ThreadID: 99999, Branch: "b", Result: storage.PushOK})
	wantErr(t, "RecordPush of an unknown thread", err, storage.ErrNotFound)
}

func testDecisions(t *testing.T, s *suite) {
	th := s.thread("slack", "1.0")
	other := s.thread("slack", "2.0")
	if ds, err := s.db.ThreadDecisions(s.ctx, th.ID); err != nil || len(ds) != 0 {
		t.Errorf("ThreadDecisions before any = %+v, %v", ds, err)
	}
	want := []storage.Decision{
		{ThreadID: th.ID, SessionID: "s1", Kind: storage.DecisionPlan, UserID: "U1", UserName: "Alice", Detail: "add a flag"},
		{ThreadID: th.ID, SessionID: "s1", Kind: storage.DecisionRevise, UserID: "U2", UserName: "Bob", Detail: "smaller, please"},
		{ThreadID: th.ID, SessionID: "s1", Kind: storage.DecisionApprove, UserID: "U1", UserName: "Alice"},
		{ThreadID: th.ID, Kind: storage.DecisionPush, UserID: "U1", Detail: "ts/a"},
		{ThreadID: th.ID, Kind: storage.DecisionCancel, UserID: "U2", UserName: "Bob\x00"},
	}
	for i, d := range want {
		if i == 2 {
			if _, err := s.db.RecordDecision(s.ctx, storage.Decision{ThreadID: other.ID, Kind: storage.DecisionCancel, UserID: "U9"}); err != nil {
				t.Fatal(err)
			}
		}
		s.clock.Advance(time.Second)
		want[i].At = s.clock.Now().Truncate(time.Millisecond)
		id, err := s.db.RecordDecision(s.ctx, d)
		if err != nil {
			t.Fatalf("RecordDecision(%s): %v", d.Kind, err)
		}
		want[i].ID = id
	}
	got, err := s.db.ThreadDecisions(s.ctx, th.ID)
	if err != nil || len(got) != len(want) {
		t.Fatalf("ThreadDecisions = %+v, %v; want %d", got, err, len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Kind == storage.DecisionCancel {
			w.UserName = g.UserName // a NUL need not survive every backend
		}
		if g.ID != w.ID || g.ThreadID != w.ThreadID || g.SessionID != w.SessionID || g.Kind != w.Kind ||
			g.UserID != w.UserID || g.UserName != w.UserName || g.Detail != w.Detail || g.At.Before(w.At) || g.At.After(w.At.Add(500*time.Millisecond)) {
			t.Errorf("decision %d = %+v, want %+v", i, g, w)
		}
	}
	if _, err := s.db.RecordDecision(s.ctx, storage.Decision{ThreadID: th.ID, Kind: "veto", UserID: "U1"}); err == nil {
		t.Error("RecordDecision of an unknown kind")
	}
	if _, err := s.db.RecordDecision(s.ctx, storage.Decision{ThreadID: th.ID, Kind: storage.DecisionApprove}); err == nil {
		t.Error("RecordDecision without a user")
	}
	_, err = s.db.RecordDecision(s.ctx, storage.Decision{ThreadID: 99999, Kind: storage.DecisionApprove, UserID: "U1"})
	wantErr(t, "RecordDecision of an unknown thread", err, storage.ErrNotFound)
}

func testUsage(t *testing.T, s *suite) {
	th := s.thread("slack", "1.0")
	other := s.thread("slack", "2.0")
	in := func(th storage.Thread, author, msg string) string {
		id, _ := s.accept(storage.Inbound{ThreadID: th.ID, MessageID: msg, AuthorID: author})
		return strconv.FormatInt(id, 10)
	}
	write := func(th storage.Thread, msgs ...llm.Message) {
		ss := s.session(th)
		var es []transcript.Entry
		for i, m := range msgs {
			es = append(es, transcript.MessageEntry(int64(i), m))
		}
		s.append(ss.ID, es...)
	}
	priced := llm.Usage{Input: 100, Output: 10, CacheRead: 800, CacheWrite: 100, Cost: &llm.Cost{Total: 0.5}}
	write(th, user("hi", in(th, "U1", "1.2")), reply(&priced), reply(&llm.Usage{Input: 50, Output: 5}),
		user("hi", in(th, "U2", "1.3")), reply(&llm.Usage{Input: 10, Output: 1, Cost: &llm.Cost{Total: 0.25}}),
		llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonError}, // no usage: not a reply that counts
		user("not from chat", ""), reply(&llm.Usage{Input: 3}))
	write(th, user("hi", in(th, "U1", "1.4")), reply(&llm.Usage{Input: 1, Output: 1})) // after !reset
	write(other, user("hi", in(other, "U1", "2.3")), reply(&llm.Usage{Input: 1000, Output: 100, Cost: &llm.Cost{Total: 1}}))

	got, err := s.db.ThreadUsage(s.ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := (storage.Usage{Replies: 5, Input: 164, Output: 17, CacheRead: 800, CacheWrite: 100, Cost: 0.75}); got != want {
		t.Errorf("ThreadUsage = %+v, want %+v", got, want)
	}
	if r, want := got.CacheHitRate(), 800.0/1064; math.Abs(r-want) > 1e-9 {
		t.Errorf("CacheHitRate = %v, want %v (cache reads of all prompt tokens)", r, want)
	}
	got, err = s.db.UserUsage(s.ctx, "slack", "U1")
	if err != nil {
		t.Fatal(err)
	}
	if want := (storage.Usage{Replies: 4, Input: 1151, Output: 116, CacheRead: 800, CacheWrite: 100, Cost: 1.5}); got != want {
		t.Errorf("UserUsage(U1) = %+v, want %+v", got, want)
	}
	got, err = s.db.UserUsage(s.ctx, "slack", "U2")
	if err != nil {
		t.Fatal(err)
	}
	// U2's input is the latest before "not from chat"'s reply too: a user
	// message without an input id does not take the replies over.
	if want := (storage.Usage{Replies: 2, Input: 13, Output: 1, Cost: 0.25}); got != want {
		t.Errorf("UserUsage(U2) = %+v, want %+v", got, want)
	}
	if got, err := s.db.UserUsage(s.ctx, "discord", "U1"); err != nil || got != (storage.Usage{}) {
		t.Errorf("UserUsage of nobody = %+v, %v", got, err)
	}
}

func testPages(t *testing.T, s *suite) {
	a := s.thread("slack", "1.0")
	b := s.thread("slack", "2.0")
	sa := s.session(a)
	s.append(sa.ID, transcript.MessageEntry(0, user("hi", "")),
		transcript.Entry{Seq: 1, Type: transcript.EntryMessage, Timestamp: time.Now().Add(time.Hour).UnixMilli(),
			Message: &llm.Message{Role: llm.RoleAssistant, Usage: &llm.Usage{Input: 1, Cost: &llm.Cost{Total: 0.125}}}})
	if _, err := s.db.StartRun(s.ctx, a.ID, sa.ID, 0); err != nil {
		t.Fatal(err)
	}
	s.accept(storage.Inbound{ThreadID: b.ID, MessageID: "2.0", Text: "!status", Mode: storage.ModeCommand})
	s.accept(storage.Inbound{ThreadID: b.ID, MessageID: "2.1", Text: "fix the build"})
	s.accept(storage.Inbound{ThreadID: b.ID, MessageID: "2.2", Text: "and the docs"})
	sums, err := s.db.ThreadSummaries(s.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 2 || sums[0].ID != b.ID || sums[1].ID != a.ID {
		t.Fatalf("ThreadSummaries = %+v, want b (input just arrived) then a", sums)
	}
	if sb := sums[0]; sb.Running || sb.Pending != 3 || sb.Cost != 0 || sb.Request != "fix the build" {
		t.Errorf("b = running %v, pending %d, cost %v, request %q (want its first prompt)", sb.Running, sb.Pending, sb.Cost, sb.Request)
	}
	if sa := sums[1]; sa.Request != "" {
		t.Errorf("a, without input, has request %q", sa.Request)
	}
	if sa := sums[1]; !sa.Running || sa.Pending != 0 || sa.Cost != 0.125 || !sa.LastActivity.After(sa.ActiveAt) || sa.Key != a.Key {
		t.Errorf("a = %+v", sa)
	}
	// A long first prompt (a pasted log) comes cut, by characters: the list
	// holds every thread, and shows a request's first line.
	c := s.thread("slack", "3.0")
	long := "deploy it\n" + strings.Repeat("é", 3*storage.RequestChars)
	s.accept(storage.Inbound{ThreadID: c.ID, MessageID: "3.1", Text: long})
	if sums, err = s.db.ThreadSummaries(s.ctx); err != nil {
		t.Fatal(err)
	}
	if sc := sums[0]; sc.ID != c.ID || sc.Request != string([]rune(long)[:storage.RequestChars]) {
		t.Errorf("c = thread %d, request of %d characters starting %.20q; want thread %d, the first %d characters of its prompt", sc.ID, len([]rune(sc.Request)), sc.Request, c.ID, storage.RequestChars)
	}
}

func testAuthorThreadSummaries(t *testing.T, s *suite) {
	ids := func(sums []storage.ThreadSummary) []int64 {
		var out []int64
		for _, x := range sums {
			out = append(out, x.ID)
		}
		return out
	}
	// U1 asks in twelve Slack threads, one of them only by !steer; the
	// newest activity comes last.
	var mine []int64
	for i := range 12 {
		s.clock.Advance(time.Minute)
		th := s.thread("slack", fmt.Sprintf("%d.0", 100+i))
		mode := storage.ModePrompt
		if i == 3 {
			mode = storage.ModeSteer
		}
		s.accept(storage.Inbound{ThreadID: th.ID, MessageID: fmt.Sprintf("%d.1", 100+i), AuthorID: "U1", Text: "fix it", Mode: mode})
		mine = append([]int64{th.ID}, mine...)
	}
	// Threads that are not U1's asking, each newer than all of them: U1
	// only typed a command; U2 asked (and U1 typed !status there); U1 asked
	// on Discord.
	s.clock.Advance(time.Minute)
	cmdOnly := s.thread("slack", "200.0")
	s.accept(storage.Inbound{ThreadID: cmdOnly.ID, MessageID: "200.1", AuthorID: "U1", Text: "!status", Mode: storage.ModeCommand})
	theirs := s.thread("slack", "201.0")
	s.accept(storage.Inbound{ThreadID: theirs.ID, MessageID: "201.1", AuthorID: "U2", Text: "deploy"})
	s.accept(storage.Inbound{ThreadID: theirs.ID, MessageID: "201.2", AuthorID: "U1", Text: "!status", Mode: storage.ModeCommand})
	other := s.thread("discord", "202")
	s.accept(storage.Inbound{Platform: "discord", ThreadID: other.ID, MessageID: "202.1", AuthorID: "U1", Text: "fix it"})

	got, err := s.db.AuthorThreadSummaries(s.ctx, "slack", "U1", 10)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ids(got), mine[:10]) {
		t.Errorf("U1's 10 = threads %v, want the newest ten they asked in %v", ids(got), mine[:10])
	}
	if len(got) > 0 && (got[0].Request != "fix it" || got[0].Repo != "r" || got[0].Key.Platform != "slack") {
		t.Errorf("U1's newest = %+v, want its summary", got[0])
	}
	if got, _ = s.db.AuthorThreadSummaries(s.ctx, "slack", "U1", 50); !reflect.DeepEqual(ids(got), mine) {
		t.Errorf("U1's all = threads %v, want %v", ids(got), mine)
	}
	if got, _ = s.db.AuthorThreadSummaries(s.ctx, "slack", "U2", 10); !reflect.DeepEqual(ids(got), []int64{theirs.ID}) {
		t.Errorf("U2's = threads %v, want [%d]", ids(got), theirs.ID)
	}
	if got, _ = s.db.AuthorThreadSummaries(s.ctx, "discord", "U1", 10); !reflect.DeepEqual(ids(got), []int64{other.ID}) {
		t.Errorf("U1's on Discord = threads %v, want [%d]", ids(got), other.ID)
	}
	if got, err = s.db.AuthorThreadSummaries(s.ctx, "slack", "U1", 0); err != nil || len(got) != 0 {
		t.Errorf("limit 0 = %v, %v; want none", ids(got), err)
	}
	if got, err = s.db.AuthorThreadSummaries(s.ctx, "slack", "nobody", 10); err != nil || len(got) != 0 {
		t.Errorf("nobody's = %v, %v; want none", ids(got), err)
	}
}

func testThreadVersion(t *testing.T, s *suite) {
	th := s.thread("slack", "1.0")
	seen := map[string]bool{}
	step := func(what string, fn func()) {
		t.Helper()
		fn()
		v, err := s.db.ThreadVersion(s.ctx, th.ID)
		if err != nil {
			t.Fatal(err)
		}
		if seen[v] {
			t.Errorf("version %q after %s was seen before", v, what)
		}
		seen[v] = true
	}
	var ss storage.Session
	var run, in int64
	step("nothing", func() {})
	step("a session", func() { ss = s.session(th) })
	step("an entry", func() { s.append(ss.ID, transcript.MessageEntry(0, user("a", ""))) })
	step("input", func() { in, _ = s.accept(storage.Inbound{ThreadID: th.ID, MessageID: "1"}) })
	step("a run", func() { run, _ = s.db.StartRun(s.ctx, th.ID, ss.ID, in) })
	step("delivery", func() { s.db.MarkInbound(s.ctx, in, storage.InboundDelivered, "") })
	step("the run's end", func() { s.db.FinishRun(s.ctx, run, storage.RunDone) })
	step("a push", func() { s.db.RecordPush(s.ctx, storage.Push{ThreadID: th.ID, Branch: "b", Result: storage.PushOK}) })
	step("a decision", func() {
		s.db.RecordDecision(s.ctx, storage.Decision{ThreadID: th.ID, Kind: storage.DecisionApprove, UserID: "U1"})
	})
	v1, _ := s.db.ThreadVersion(s.ctx, th.ID)
	s.db.UpdateOutbound(s.ctx, 1, "x") // nothing the page shows
	if v2, _ := s.db.ThreadVersion(s.ctx, th.ID); v1 != v2 {
		t.Errorf("version changed without a change: %s → %s", v1, v2)
	}
}

func testEvents(t *testing.T, s *suite) {
	for i, want := range []bool{true, false, false} {
		first, err := s.db.MarkEventProcessed(s.ctx, "slack", "Ev1")
		if err != nil || first != want {
			t.Errorf("MarkEventProcessed #%d = %v, %v; want %v", i, first, err, want)
		}
	}
	if first, err := s.db.MarkEventProcessed(s.ctx, "discord", "Ev1"); err != nil || !first {
		t.Errorf("another platform's event id = %v, %v; want first", first, err)
	}
	if _, err := s.db.MarkEventProcessed(s.ctx, "slack", ""); err == nil {
		t.Error("an empty event id was marked")
	}
	// Ids are remembered for the retention (24h by default), then pruned
	// as new events arrive.
	s.clock.Advance(23 * time.Hour)
	if first, _ := s.db.MarkEventProcessed(s.ctx, "slack", "Ev1"); first {
		t.Error("an event id was forgotten within the retention")
	}
	s.clock.Advance(25 * time.Hour)
	s.db.MarkEventProcessed(s.ctx, "slack", "Ev-new") // prunes
	if first, err := s.db.MarkEventProcessed(s.ctx, "discord", "Ev1"); err != nil || !first {
		t.Errorf("an event id past the retention = %v, %v; want first again", first, err)
	}
}

func testOps(t *testing.T, s *suite) {
	if err := s.db.Ping(s.ctx); err != nil {
		t.Fatal(err)
	}
	th := s.thread("slack", "1.0")
	a, _ := s.accept(storage.Inbound{ThreadID: th.ID, MessageID: "1"})
	s.accept(storage.Inbound{ThreadID: th.ID, MessageID: "2"})
	b, _ := s.accept(storage.Inbound{ThreadID: th.ID, MessageID: "3"})
	c, _ := s.accept(storage.Inbound{ThreadID: th.ID, MessageID: "4"})
	s.db.MarkInbound(s.ctx, a, storage.InboundQueued, "steer")
	s.db.MarkInbound(s.ctx, b, storage.InboundDelivered, "")
	s.db.MarkInbound(s.ctx, c, storage.InboundDropped, "too many")
	got, err := s.db.PendingInboundCounts(s.ctx)
	if err != nil || !reflect.DeepEqual(got, map[string]int{"received": 1, "queued": 1}) {
		t.Errorf("PendingInboundCounts = %v, %v", got, err)
	}
}

func testPendingPosts(t *testing.T, s *suite) {
	th := s.thread("slack", "1.0")
	run, _ := s.db.StartRun(s.ctx, th.ID, s.session(th).ID, 0)
	before := s.clock.Now().Truncate(time.Millisecond)
	ids, err := s.db.RecordPendingPosts(s.ctx, []storage.PendingPost{
		{ThreadID: th.ID, RunID: run, Key: "k1", Text: "answer"},
		{ThreadID: th.ID, RunID: run, Key: "k2", Text: "footer"},
		{ThreadID: th.ID, Key: "k3", Text: "refused"},
	})
	after := s.clock.Now()
	if err != nil || len(ids) != 3 {
		t.Fatalf("RecordPendingPosts = %v, %v", ids, err)
	}
	if _, err := s.db.RecordPendingPosts(s.ctx, []storage.PendingPost{{ThreadID: th.ID, Key: "", Text: "x"}}); err == nil {
		t.Error("a post without a key was recorded")
	}
	if _, err := s.db.RecordPendingPosts(s.ctx, []storage.PendingPost{{ThreadID: th.ID, Key: "k1", Text: "again"}}); err == nil {
		t.Error("a key was recorded twice")
	}
	_, err = s.db.RecordPendingPosts(s.ctx, []storage.PendingPost{{ThreadID: 99999, Key: "k4", Text: "x"}})
	wantErr(t, "a post of an unknown thread", err, storage.ErrNotFound)
	if err := s.db.MarkPosted(s.ctx, ids[0], "9.9"); err != nil {
		t.Fatal(err)
	}
	if err := s.db.MarkPosted(s.ctx, ids[0], "other"); err != nil {
		t.Errorf("marking twice: %v", err)
	}
	if err := s.db.MarkPosted(s.ctx, ids[2], ""); err != nil { // the platform refused it for good
		t.Fatal(err)
	}
	wantErr(t, "MarkPosted of an unknown post", s.db.MarkPosted(s.ctx, 99999, ""), storage.ErrNotFound)
	// The process dies before the footer was accepted.
	s.db.Close()
	s.db = s.reopen()
	left, err := s.db.UnpostedPosts(s.ctx)
	if err != nil || len(left) != 1 {
		t.Fatalf("UnpostedPosts after a restart = %+v, %v; want the footer", left, err)
	}
	want := storage.PendingPost{ID: ids[1], ThreadID: th.ID, Thread: th.Key, RunID: run, Key: "k2", Text: "footer", CreatedAt: left[0].CreatedAt}
	if left[0] != want || left[0].CreatedAt.Before(before) || left[0].CreatedAt.After(after) {
		t.Errorf("UnpostedPosts after a restart = %+v, want %+v created in [%s, %s]", left[0], want, before, after)
	}
	if err := s.db.MarkPosted(s.ctx, ids[1], "9.10"); err != nil {
		t.Fatal(err)
	}
	if left, err := s.db.UnpostedPosts(s.ctx); err != nil || len(left) != 0 {
		t.Errorf("UnpostedPosts after marking = %+v, %v; want none", left, err)
	}
}

// Many sessions append at once, as 50 busy threads do: nothing is lost or
// reordered.
func testConcurrentAppends(t *testing.T, s *suite) {
	const sessions, each = 50, 20
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = s.session(s.thread("slack", fmt.Sprint(i, ".0"))).ID
	}
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for _, id := range ids {
		wg.Go(func() {
			for seq := range each {
				if err := s.db.AppendEntries(s.ctx, id, []transcript.Entry{transcript.MessageEntry(int64(seq), llm.UserText(fmt.Sprint(seq)))}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, id := range ids {
		got := s.load(id)
		if len(got) != each {
			t.Fatalf("session %s: %d entries, want %d", id, len(got), each)
		}
		for i, e := range got {
			if e.Seq != int64(i) || e.Message.TextContent() != fmt.Sprint(i) {
				t.Fatalf("session %s entry %d = seq %d %q", id, i, e.Seq, e.Message.TextContent())
			}
		}
	}
}

// The same events delivered on many connections at once are each stored once.
func testConcurrentAccepts(t *testing.T, s *suite) {
	th := s.thread("slack", "1.0")
	const events, copies = 10, 8
	var mu sync.Mutex
	ids := map[int][]int64{}
	dups := 0
	var wg sync.WaitGroup
	for c := range copies {
		for e := range events {
			wg.Go(func() {
				// Half the copies carry the event id, half only the message id.
				in := storage.Inbound{Platform: "slack", Channel: "C1", MessageID: fmt.Sprint("1.", e), ThreadID: th.ID, Mode: storage.ModePrompt}
				if c%2 == 0 {
					in.EventID = fmt.Sprint("Ev", e)
				}
				id, dup, err := s.db.AcceptInbound(s.ctx, in)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				ids[e] = append(ids[e], id)
				if dup {
					dups++
				}
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	for e, got := range ids {
		for _, id := range got {
			if id != got[0] {
				t.Errorf("event %d stored as %v", e, got)
				break
			}
		}
	}
	if dups != events*(copies-1) {
		t.Errorf("%d duplicates, want %d", dups, events*(copies-1))
	}
	pending, _ := s.db.PendingInbound(s.ctx, th.ID)
	if len(pending) != events {
		t.Errorf("%d pending, want %d", len(pending), events)
	}
}

func testConcurrentEnsureThread(t *testing.T, s *suite) {
	key := storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C1", Thread: "1.0"}
	const n = 16
	var wg sync.WaitGroup
	var mu sync.Mutex
	created := 0
	seen := map[int64]bool{}
	for range n {
		wg.Go(func() {
			th, c, err := s.db.EnsureThread(s.ctx, key, storage.ThreadInit{})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			seen[th.ID] = true
			if c {
				created++
			}
		})
	}
	wg.Wait()
	if created != 1 || len(seen) != 1 {
		t.Errorf("%d callers created the thread, %d ids; want 1 and 1", created, len(seen))
	}
}

// Two writers on one session (a replica that lost its lease, say) race for
// the same seq: exactly one wins, the other is told the seq is taken and can
// move to NextSeq.
func testConcurrentSameSeq(t *testing.T, s *suite) {
	ss := s.session(s.thread("slack", "1.0"))
	const writers = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	won, dup := 0, 0
	for w := range writers {
		wg.Go(func() {
			err := s.db.AppendEntries(s.ctx, ss.ID, []transcript.Entry{transcript.MessageEntry(0, llm.UserText(fmt.Sprint(w)))})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case errors.Is(err, storage.ErrDuplicateEntry):
				dup++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if won != 1 || dup != writers-1 {
		t.Errorf("%d appends won seq 0 and %d were duplicates; want 1 and %d", won, dup, writers-1)
	}
	if n, err := s.db.NextSeq(s.ctx, ss.ID); err != nil || n != 1 {
		t.Errorf("NextSeq = %d, %v; want 1", n, err)
	}
}

// What a write reported as done is there after a restart.
func testReopen(t *testing.T, s *suite) {
	th := s.thread("slack", "1.0")
	ss := s.session(th)
	s.append(ss.ID, everyType()...)
	in, _ := s.accept(storage.Inbound{ThreadID: th.ID, EventID: "Ev1", MessageID: "1.1"})
	s.db.Close()
	s.db = s.reopen()
	got, err := s.db.ThreadByID(s.ctx, th.ID)
	if err != nil || got.SessionID != ss.ID {
		t.Errorf("thread after reopen = %+v, %v", got, err)
	}
	if es := transcript.WithoutUnits(s.load(ss.ID)); !reflect.DeepEqual(es, everyType()) {
		t.Errorf("entries after reopen differ")
	}
	if id, dup := s.accept(storage.Inbound{ThreadID: th.ID, EventID: "Ev1"}); !dup || id != in {
		t.Errorf("a redelivery after reopen: id %d duplicate %v, want %d true", id, dup, in)
	}
	// The second open of the same database also migrates nothing and keeps
	// working for new writes.
	if n, err := s.db.NextSeq(s.ctx, ss.ID); err != nil || n != int64(len(everyType())) {
		t.Errorf("NextSeq after reopen = %d, %v", n, err)
	}
}

func testClosed(t *testing.T, s *suite) {
	th := s.thread("slack", "1.0")
	if err := s.db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	if _, _, err := s.db.AcceptInbound(s.ctx, storage.Inbound{Platform: "slack", Channel: "C1", ThreadID: th.ID, Mode: storage.ModePrompt}); err == nil {
		t.Error("AcceptInbound on a closed store succeeded")
	}
	if err := s.db.Ping(s.ctx); err == nil {
		t.Error("Ping of a closed store succeeded")
	}
}

// Each run's replies are summed into its own usage record when it ends:
// tokens, cost and the models that replied; the next run of the
// session counts only what came after; a run the process died in gets its
// record when it is marked interrupted.
func testRunUsage(t *testing.T, s *suite) {
	th := s.thread("slack", "7.1")
	ss := s.session(th)
	seq := int64(0)
	write := func(msgs ...llm.Message) {
		t.Helper()
		var es []transcript.Entry
		for _, m := range msgs {
			es = append(es, transcript.MessageEntry(seq, m))
			seq++
		}
		s.append(ss.ID, es...)
	}
	input := func(msg string) (int64, llm.Message) {
		id, _ := s.accept(storage.Inbound{ThreadID: th.ID, MessageID: msg, AuthorID: "U1"})
		return id, user("do "+msg, strconv.FormatInt(id, 10))
	}
	replyBy := func(model string, u llm.Usage) llm.Message {
		return llm.Message{Role: llm.RoleAssistant, Model: model, StopReason: llm.StopReasonStop, Content: []llm.Content{llm.Text("ok")}, Usage: &u}
	}
	write(replyBy("old", llm.Usage{Input: 9999})) // before any run: no run's
	in1, u1 := input("1.2")
	run1, err := s.db.StartRun(s.ctx, th.ID, ss.ID, in1)
	if err != nil {
		t.Fatal(err)
	}
	write(u1,
		replyBy("model-a", llm.Usage{Input: 100, Output: 10, CacheRead: 800, CacheWrite: 50, Cost: &llm.Cost{Total: 0.5}}),
		llm.Message{Role: llm.RoleToolResult, ToolCallID: "c1", Content: []llm.Content{llm.Text("out")}},
		replyBy("model-b", llm.Usage{Input: 20, Output: 2, CacheRead: 900, Cost: &llm.Cost{Total: 0.25}}),
		replyBy("model-a", llm.Usage{Input: 1, Output: 1}),
		llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonError}) // no usage
	_, err = s.db.RunUsageOf(s.ctx, run1)
	wantErr(t, "usage of a running run", err, storage.ErrNotFound)
	if err := s.db.FinishRun(s.ctx, run1, storage.RunDone); err != nil {
		t.Fatal(err)
	}
	want1 := storage.RunUsage{Usage: storage.Usage{Replies: 3, Input: 121, Output: 13, CacheRead: 1700, CacheWrite: 50, Cost: 0.75}, Models: []string{"model-a", "model-b"}}
	if got, err := s.db.RunUsageOf(s.ctx, run1); err != nil || !reflect.DeepEqual(got, want1) {
		t.Errorf("run 1 usage = %+v, %v; want %+v", got, err, want1)
	}
	run2, _ := s.db.StartRun(s.ctx, th.ID, ss.ID, 0)
	write(llm.UserText("queued"), replyBy("model-b", llm.Usage{Input: 5, Output: 5}))
	if err := s.db.FinishRun(s.ctx, run2, storage.RunStopped); err != nil {
		t.Fatal(err)
	}
	want2 := storage.RunUsage{Usage: storage.Usage{Replies: 1, Input: 5, Output: 5}, Models: []string{"model-b"}}
	if got, err := s.db.RunUsageOf(s.ctx, run2); err != nil || !reflect.DeepEqual(got, want2) {
		t.Errorf("run 2 usage = %+v, %v; want %+v", got, err, want2)
	}
	in3, u3 := input("1.3")
	run3, _ := s.db.StartRun(s.ctx, th.ID, ss.ID, in3)
	write(u3, replyBy("model-a", llm.Usage{Input: 7, Output: 3}))
	s.db.Close()
	s.db = s.reopen()
	if _, err := s.db.InterruptRuns(s.ctx); err != nil {
		t.Fatal(err)
	}
	want3 := storage.RunUsage{Usage: storage.Usage{Replies: 1, Input: 7, Output: 3}, Models: []string{"model-a"}}
	// A run whose record stays open while its work is pushed ends after the
	// next run, which started and ended meanwhile: each counts its own
	// replies, and the first one's entries end before the next one's input.
	in4, u4 := input("1.4")
	run4, _ := s.db.StartRun(s.ctx, th.ID, ss.ID, in4)
	write(u4, replyBy("model-a", llm.Usage{Input: 11, Output: 1}))
	in5, u5 := input("1.5")
	run5, _ := s.db.StartRun(s.ctx, th.ID, ss.ID, in5)
	write(u5, replyBy("model-b", llm.Usage{Input: 13, Output: 2}))
	for _, id := range []int64{run5, run4} {
		if err := s.db.FinishRun(s.ctx, id, storage.RunDone); err != nil {
			t.Fatal(err)
		}
	}
	want4 := storage.RunUsage{Usage: storage.Usage{Replies: 1, Input: 11, Output: 1}, Models: []string{"model-a"}}
	want5 := storage.RunUsage{Usage: storage.Usage{Replies: 1, Input: 13, Output: 2}, Models: []string{"model-b"}}
	all, err := s.db.ThreadRunUsage(s.ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	if wantAll := map[int64]storage.RunUsage{run1: want1, run2: want2, run3: want3, run4: want4, run5: want5}; !reflect.DeepEqual(all, wantAll) {
		t.Errorf("ThreadRunUsage =\n %+v\nwant\n %+v", all, wantAll)
	}
	if other, err := s.db.ThreadRunUsage(s.ctx, s.thread("slack", "8.1").ID); err != nil || len(other) != 0 {
		t.Errorf("another thread's run usage = %v, %v; want none", other, err)
	}
	_, err = s.db.RunUsageOf(s.ctx, 99999)
	wantErr(t, "usage of an unknown run", err, storage.ErrNotFound)
}

func (s *suite) acquire(threadID int64, owner string, ttl time.Duration) (storage.Lease, bool) {
	s.t.Helper()
	l, ok, err := s.db.AcquireLease(s.ctx, threadID, owner, ttl)
	if err != nil {
		s.t.Fatalf("AcquireLease(%d, %s): %v", threadID, owner, err)
	}
	return l, ok
}

// Acquisition, renewal, expiry and release of one thread's lease by two
// replicas, on the store's clock.
func testLeases(t *testing.T, s *suite) {
	th := s.thread("slack", "1.0")
	const ttl = 30 * time.Second
	a, ok := s.acquire(th.ID, "replica-a", ttl)
	if !ok || a.ThreadID != th.ID || a.Owner != "replica-a" || a.Fence <= 0 {
		t.Fatalf("first acquisition = %+v, %v", a, ok)
	}
	if d := a.Expires.Sub(s.clock.Now()); d <= 0 || d > ttl {
		t.Errorf("lease expires in %s, want within %s", d, ttl)
	}
	// Held: another replica is refused and told who holds it.
	if b, ok := s.acquire(th.ID, "replica-b", ttl); ok || b.Owner != "replica-a" || b.Fence != a.Fence {
		t.Errorf("acquisition of a held lease = %+v, %v; want refused, naming replica-a", b, ok)
	}
	// The holder acquiring again keeps its fence.
	if again, ok := s.acquire(th.ID, "replica-a", ttl); !ok || again.Fence != a.Fence {
		t.Errorf("the holder's acquisition = %+v, %v; want the same fence %d", again, ok, a.Fence)
	}
	// Renewal keeps it past the first expiry.
	s.clock.Advance(20 * time.Second)
	renewed, err := s.db.RenewLease(s.ctx, a, ttl)
	if err != nil || renewed.Fence != a.Fence || !renewed.Expires.After(a.Expires) {
		t.Fatalf("RenewLease = %+v, %v; want a later expiry, the same fence", renewed, err)
	}
	s.clock.Advance(20 * time.Second) // past the first expiry, before the renewed one
	if _, ok := s.acquire(th.ID, "replica-b", ttl); ok {
		t.Fatal("a renewed lease was taken before it expired")
	}
	// Expiry: replica-a stopped renewing; replica-b takes over with a larger fence.
	s.clock.Advance(ttl)
	b, ok := s.acquire(th.ID, "replica-b", ttl)
	if !ok || b.Owner != "replica-b" || b.Fence <= a.Fence {
		t.Fatalf("acquisition after expiry = %+v, %v; want replica-b with a fence above %d", b, ok, a.Fence)
	}
	_, err = s.db.RenewLease(s.ctx, renewed, ttl)
	var fe *storage.FencedError
	if !errors.As(err, &fe) || !errors.Is(err, storage.ErrFenced) || fe.Current != b.Fence || fe.Fence != a.Fence {
		t.Errorf("the old owner's renewal = %v, want ErrFenced (stale %d, current %d)", err, a.Fence, b.Fence)
	}
	wantErr(t, "the old owner's release", s.db.ReleaseLease(s.ctx, renewed), storage.ErrFenced)
	// An expired lease nobody took is still the thread's: its owner may renew it.
	s.clock.Advance(2 * ttl)
	if b2, err := s.db.RenewLease(s.ctx, b, ttl); err != nil || b2.Fence != b.Fence {
		t.Errorf("renewal of an expired, untaken lease = %+v, %v", b2, err)
	}
	// Release: the thread is free at once, and the next owner's fence is larger.
	if err := s.db.ReleaseLease(s.ctx, b); err != nil {
		t.Fatal(err)
	}
	c, ok := s.acquire(th.ID, "replica-a", ttl)
	if !ok || c.Fence <= b.Fence {
		t.Errorf("acquisition after release = %+v, %v; want a fence above %d", c, ok, b.Fence)
	}
	// Leases are per thread, and durable.
	other := s.thread("slack", "2.0")
	if o, ok := s.acquire(other.ID, "replica-b", ttl); !ok || o.Owner != "replica-b" {
		t.Errorf("another thread's lease = %+v, %v", o, ok)
	}
	s.db.Close()
	s.db = s.reopen()
	if d, ok := s.acquire(th.ID, "replica-b", ttl); ok || d.Fence != c.Fence || d.Owner != "replica-a" {
		t.Errorf("after a restart: %+v, %v; want replica-a's live lease %d", d, ok, c.Fence)
	}
	// Errors.
	_, _, err = s.db.AcquireLease(s.ctx, 99999, "replica-a", ttl)
	wantErr(t, "a lease on an unknown thread", err, storage.ErrNotFound)
	if _, _, err := s.db.AcquireLease(s.ctx, th.ID, "", ttl); err == nil {
		t.Error("a lease without an owner")
	}
	if _, _, err := s.db.AcquireLease(s.ctx, th.ID, "replica-a", 0); err == nil {
		t.Error("a lease without a ttl")
	}
}

// Many replicas race for each thread, round after round as leases expire:
// one owner per round, and every round's fence above the last.
func testLeaseRace(t *testing.T, s *suite) {
	const owners, rounds, ttl = 8, 5, 10 * time.Second
	th := s.thread("slack", "1.0")
	last := int64(0)
	for round := range rounds {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var won []storage.Lease
		for o := range owners {
			wg.Go(func() {
				l, ok, err := s.db.AcquireLease(s.ctx, th.ID, fmt.Sprint("replica-", o), ttl)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					mu.Lock()
					won = append(won, l)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if len(won) != 1 {
			t.Fatalf("round %d: %d owners won the lease (%+v), want 1", round, len(won), won)
		}
		if won[0].Fence <= last {
			t.Fatalf("round %d: fence %d, want above the last round's %d", round, won[0].Fence, last)
		}
		last = won[0].Fence
		s.clock.Advance(ttl + time.Second)
	}
}

// A replica that lost its lease cannot write the thread's session entries,
// runs or outbound records; the new owner can; writes without a lease are
// not checked.
func testFencedWrites(t *testing.T, s *suite) {
	const ttl = 30 * time.Second
	th := s.thread("slack", "1.0")
	ss := s.session(th)
	a, _ := s.acquire(th.ID, "replica-a", ttl)
	actx := storage.WithLease(s.ctx, a)
	if err := s.db.AppendEntries(actx, ss.ID, []transcript.Entry{transcript.MessageEntry(0, user("a", ""))}); err != nil {
		t.Fatalf("the owner's append: %v", err)
	}
	run, err := s.db.StartRun(actx, th.ID, ss.ID, 0)
	if err != nil {
		t.Fatalf("the owner's StartRun: %v", err)
	}
	out, err := s.db.RecordOutbound(actx, storage.Outbound{ThreadID: th.ID, RunID: run, Kind: storage.OutboundStatus, Channel: "C1", MessageID: "9.1"})
	if err != nil {
		t.Fatalf("the owner's RecordOutbound: %v", err)
	}
	// replica-a pauses past its lease; replica-b takes the thread over.
	s.clock.Advance(ttl + time.Second)
	b, ok := s.acquire(th.ID, "replica-b", ttl)
	if !ok {
		t.Fatal("the takeover failed")
	}
	in, _ := s.accept(storage.Inbound{ThreadID: th.ID, MessageID: "2"})
	stale := []struct {
		what string
		err  error
	}{
		{"AppendEntries", s.db.AppendEntries(actx, ss.ID, []transcript.Entry{transcript.MessageEntry(1, user("stale", strconv.FormatInt(in, 10)))})},
		{"StartRun", func() error { _, err := s.db.StartRun(actx, th.ID, ss.ID, 0); return err }()},
		{"FinishRun", s.db.FinishRun(actx, run, storage.RunDone)},
		{"RecordOutbound", func() error {
			_, err := s.db.RecordOutbound(actx, storage.Outbound{ThreadID: th.ID, Kind: storage.OutboundAck, Channel: "C1", MessageID: "9.2"})
			return err
		}()},
		{"UpdateOutbound", s.db.UpdateOutbound(actx, out, "stale text")},
		{"RecordPendingPosts", func() error {
			_, err := s.db.RecordPendingPosts(actx, []storage.PendingPost{{ThreadID: th.ID, RunID: run, Key: "stale-key", Text: "the stale answer"}})
			return err
		}()},
	}
	for _, w := range stale {
		wantErr(t, "the stale owner's "+w.what, w.err, storage.ErrFenced)
	}
	// Nothing of the stale writes is stored: no entry, the input still pending.
	if es := s.load(ss.ID); len(es) != 1 {
		t.Errorf("%d entries after the stale append, want 1", len(es))
	}
	if got, _ := s.db.GetInbound(s.ctx, in); got.State != storage.InboundReceived {
		t.Errorf("the stale append delivered the input: %s", got.State)
	}
	if r, _ := s.db.GetRun(s.ctx, run); r.Outcome != "" {
		t.Errorf("the stale owner finished the run: %s", r.Outcome)
	}
	if o, _ := s.db.OutboundForRun(s.ctx, run); len(o) != 1 || o[0].Text != "" {
		t.Errorf("outbound after the stale writes = %+v", o)
	}
	if p, err := s.db.UnpostedPosts(s.ctx); err != nil || len(p) != 0 {
		t.Errorf("the stale owner's answer is pending: %+v, %v (it would be posted at the next start)", p, err)
	}
	// The new owner writes.
	bctx := storage.WithLease(s.ctx, b)
	if err := s.db.AppendEntries(bctx, ss.ID, []transcript.Entry{transcript.MessageEntry(1, user("fresh", strconv.FormatInt(in, 10)))}); err != nil {
		t.Errorf("the new owner's append: %v", err)
	}
	if err := s.db.FinishRun(bctx, run, storage.RunInterrupted); err != nil {
		t.Errorf("the new owner's FinishRun: %v", err)
	}
	if err := s.db.UpdateOutbound(bctx, out, "taken over"); err != nil {
		t.Errorf("the new owner's UpdateOutbound: %v", err)
	}
	if _, err := s.db.RecordPendingPosts(bctx, []storage.PendingPost{{ThreadID: th.ID, Key: "fresh-key", Text: "the answer"}}); err != nil {
		t.Errorf("the new owner's RecordPendingPosts: %v", err)
	}
	// A lease is for its own thread only.
	other := s.thread("slack", "2.0")
	_, err = s.db.StartRun(bctx, other.ID, s.session(other).ID, 0)
	wantErr(t, "a write to another thread under a lease", err, storage.ErrFenced)
	// Without a lease in the context, writes are not checked.
	if _, err := s.db.StartRun(s.ctx, th.ID, ss.ID, 0); err != nil {
		t.Errorf("a write without a lease: %v", err)
	}
	// Many stale and fresh appends at once: only the owner's land.
	var wg sync.WaitGroup
	var mu sync.Mutex
	landed := 0
	for i := range 20 {
		ctx := actx
		if i%2 == 0 {
			ctx = bctx
		}
		wg.Go(func() {
			err := s.db.AppendEntries(ctx, ss.ID, []transcript.Entry{transcript.MessageEntry(int64(10+i), user("x", ""))})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && ctx == bctx:
				landed++
			case errors.Is(err, storage.ErrFenced) && ctx == actx:
			default:
				t.Errorf("append %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	if landed != 10 {
		t.Errorf("%d of the owner's 10 appends landed", landed)
	}
	if n := len(s.load(ss.ID)); n != 12 {
		t.Errorf("%d entries, want 12", n)
	}
}

// A takeover and the old owner's writes racing it: each write lands before
// the new owner's acquisition returns, or is refused. Nothing of the old
// owner's lands after it (the fence is checked in the write's transaction,
// and the acquisition waits for that transaction).
func testTakeoverAfterWrites(t *testing.T, s *suite) {
	const ttl, writers, rounds = 10 * time.Second, 8, 6
	th := s.thread("slack", "1.0")
	ss := s.session(th)
	var seq atomic.Int64
	l, _ := s.acquire(th.ID, "replica-0", ttl)
	for round := range rounds {
		lctx := storage.WithLease(s.ctx, l)
		var wg sync.WaitGroup
		var landed atomic.Int64
		started := make(chan struct{})
		var once sync.Once
		for range writers {
			wg.Go(func() {
				for {
					err := s.db.AppendEntries(lctx, ss.ID, []transcript.Entry{transcript.MessageEntry(seq.Add(1), user("x", ""))})
					if errors.Is(err, storage.ErrFenced) {
						return
					}
					if err != nil {
						t.Errorf("round %d: append: %v", round, err)
						return
					}
					if landed.Add(1) >= writers {
						once.Do(func() { close(started) })
					}
				}
			})
		}
		<-started
		s.clock.Advance(ttl + time.Second) // the owner paused past its lease
		next, ok := s.acquire(th.ID, fmt.Sprint("replica-", round+1), ttl)
		if !ok {
			t.Fatalf("round %d: the takeover failed", round)
		}
		atTakeover := len(s.load(ss.ID))
		wg.Wait()
		if n := len(s.load(ss.ID)); n != atTakeover {
			t.Fatalf("round %d: %d entries when the takeover returned, %d once the old owner stopped: its writes landed after the takeover", round, atTakeover, n)
		}
		l = next
	}
}

// UnownedThreads lists the threads with work left and no live lease: input
// not delivered, a run not ended, a post not made.
func testUnownedThreads(t *testing.T, s *suite) {
	unowned := func() []int64 {
		t.Helper()
		ids, err := s.db.UnownedThreads(s.ctx)
		if err != nil {
			t.Fatalf("UnownedThreads: %v", err)
		}
		return ids
	}
	idle := s.thread("slack", "1.0")
	s.session(idle)
	if ids := unowned(); len(ids) != 0 {
		t.Fatalf("UnownedThreads with no work = %v", ids)
	}
	queued := s.thread("slack", "2.0")
	in, _ := s.accept(storage.Inbound{ThreadID: queued.ID, MessageID: "2.1", Text: "hi"})
	running := s.thread("slack", "3.0")
	if _, err := s.db.StartRun(s.ctx, running.ID, s.session(running).ID, 0); err != nil {
		t.Fatal(err)
	}
	posting := s.thread("slack", "4.0")
	posts, err := s.db.RecordPendingPosts(s.ctx, []storage.PendingPost{{ThreadID: posting.ID, Key: "k", Text: "answer"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := unowned(), []int64{queued.ID, running.ID, posting.ID}; !slices.Equal(got, want) {
		t.Fatalf("UnownedThreads = %v, want %v", got, want)
	}
	// A live lease hides a thread; an expired or released one does not.
	const ttl = 10 * time.Second
	lq, _ := s.acquire(queued.ID, "replica-a", ttl)
	s.acquire(running.ID, "replica-b", ttl)
	if got, want := unowned(), []int64{posting.ID}; !slices.Equal(got, want) {
		t.Errorf("UnownedThreads with two leased = %v, want %v", got, want)
	}
	if err := s.db.ReleaseLease(s.ctx, lq); err != nil {
		t.Fatal(err)
	}
	s.clock.Advance(ttl)
	if got, want := unowned(), []int64{queued.ID, running.ID, posting.ID}; !slices.Equal(got, want) {
		t.Errorf("UnownedThreads after a release and an expiry = %v, want %v", got, want)
	}
	// Work done: nothing left.
	if err := s.db.MarkInbound(s.ctx, in, storage.InboundDropped, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.InterruptRuns(s.ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.db.MarkPosted(s.ctx, posts[0], "4.1"); err != nil {
		t.Fatal(err)
	}
	if ids := unowned(); len(ids) != 0 {
		t.Errorf("UnownedThreads with the work done = %v", ids)
	}
}

// ListenInbound hears of every accepted message, once, and not of duplicates.
func testListenInbound(t *testing.T, s *suite) {
	th := s.thread("slack", "1.0")
	ctx, cancel := context.WithCancel(s.ctx)
	heard := make(chan int64, 16)
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		close(ready)
		done <- s.db.ListenInbound(ctx, func(id int64) { heard <- id })
	}()
	<-ready
	// The listener may take a moment to start: accept until it hears.
	var n int
	deadline := time.After(10 * time.Second)
	for got := false; !got; {
		n++
		s.accept(storage.Inbound{ThreadID: th.ID, MessageID: fmt.Sprintf("1.%d", n), Text: "hi"})
		select {
		case id := <-heard:
			if id != th.ID {
				t.Fatalf("heard thread %d, want %d", id, th.ID)
			}
			got = true
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatal("ListenInbound heard nothing in 10 s")
		}
	}
	// A duplicate is not news; the next message is.
	if _, dup := s.accept(storage.Inbound{ThreadID: th.ID, MessageID: fmt.Sprintf("1.%d", n), Text: "hi"}); !dup {
		t.Fatal("the redelivery was not a duplicate")
	}
	other := s.thread("slack", "2.0")
	s.accept(storage.Inbound{ThreadID: other.ID, MessageID: "2.1", Text: "hi"})
	for {
		select {
		case id := <-heard:
			if id == th.ID {
				continue // a late notification of the warm-up messages
			}
			if id != other.ID {
				t.Fatalf("heard thread %d, want %d", id, other.ID)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the next message was not heard")
		}
		break
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ListenInbound returned %v when its context ended", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ListenInbound did not return when its context ended")
	}
}
