package sqlite_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// fakeClock is a settable clock for timestamps and pruning.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestEnsureThread(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	db := openDB(t, sqlite.WithClock(clock.now))
	key := storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C1", Thread: "1700000000.000100"}

	th, created, err := db.EnsureThread(ctx, key, storage.ThreadInit{Repo: "app", Branch: "bot/slack-1", WorkspacePath: "/w/1"})
	if err != nil || !created {
		t.Fatalf("first EnsureThread = created %v, err %v; want created", created, err)
	}
	want := storage.Thread{ID: th.ID, Key: key, Repo: "app", Branch: "bot/slack-1", WorkspacePath: "/w/1",
		State: storage.ThreadActive, ActiveAt: clock.t, CreatedAt: clock.t, UpdatedAt: clock.t}
	if th != want {
		t.Errorf("new thread = %+v, want %+v", th, want)
	}
	again, created, err := db.EnsureThread(ctx, key, storage.ThreadInit{Repo: "other"})
	if err != nil || created {
		t.Fatalf("second EnsureThread = created %v, err %v; want found", created, err)
	}
	if again != th {
		t.Errorf("second EnsureThread = %+v, want the first thread unchanged %+v", again, th)
	}
	// Another team with the same channel and ts is another thread.
	other, created, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Team: "T2", Channel: "C1", Thread: key.Thread}, storage.ThreadInit{})
	if err != nil || !created || other.ID == th.ID {
		t.Errorf("EnsureThread in another team = id %d created %v err %v, want a new thread", other.ID, created, err)
	}
	if _, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack"}, storage.ThreadInit{}); err == nil {
		t.Error("EnsureThread with an incomplete key succeeded, want an error")
	}
	if _, err := db.GetThread(ctx, storage.ThreadKey{Platform: "slack", Team: "T9", Channel: "C", Thread: "1"}); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("GetThread(unknown) = %v, want ErrNotFound", err)
	}
}

func TestThreadUpdates(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	db := openDB(t, sqlite.WithClock(clock.now))
	a, _, _ := db.EnsureThread(ctx, storage.ThreadKey{Platform: "discord", Team: "G", Channel: "C", Thread: "1"}, storage.ThreadInit{})
	b, _, _ := db.EnsureThread(ctx, storage.ThreadKey{Platform: "discord", Team: "G", Channel: "C", Thread: "2"}, storage.ThreadInit{})
	clock.advance(time.Minute)

	if err := db.SetThreadWorkspace(ctx, a.ID, storage.ThreadInit{Repo: "app", Branch: "bot/discord-1", WorkspacePath: "/w/a"}); err != nil {
		t.Fatal(err)
	}
	if err := db.SetThreadState(ctx, b.ID, storage.ThreadClosed); err != nil {
		t.Fatal(err)
	}
	if err := db.SetThreadState(ctx, b.ID, "paused"); err == nil {
		t.Error("SetThreadState(paused) succeeded, want an error")
	}
	if err := db.SetThreadWorkspace(ctx, 999, storage.ThreadInit{}); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("SetThreadWorkspace(unknown) = %v, want ErrNotFound", err)
	}
	// Snowflakes grow in length, then lexically; older ids never win.
	for _, id := range []string{"999999999999999999", "1000000000000000001", "999999999999999998", "1000000000000000000"} {
		if err := db.SetLastSeenMessage(ctx, a.ID, id); err != nil {
			t.Fatal(err)
		}
	}
	got, err := db.ThreadByID(ctx, a.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Repo != "app" || got.Branch != "bot/discord-1" || got.WorkspacePath != "/w/a" || !got.UpdatedAt.Equal(clock.t) {
		t.Errorf("thread after SetThreadWorkspace = %+v, want repo app, branch bot/discord-1, path /w/a, updated %v", got, clock.t)
	}
	if got.LastSeenMessage != "1000000000000000001" {
		t.Errorf("LastSeenMessage = %q, want the newest, 1000000000000000001", got.LastSeenMessage)
	}
	active, err := db.ActiveThreads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(active) != 1 || active[0].ID != a.ID {
		t.Errorf("ActiveThreads = %+v, want only thread %d (thread %d is closed)", active, a.ID, b.ID)
	}
}

func TestSessions(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	th, _, _ := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Team: "T", Channel: "C", Thread: "1.0"}, storage.ThreadInit{})
	first, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "gpt-4.1", SystemPrompt: "be brief",
		Settings: json.RawMessage(`{"thinking":"low"}`)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := db.GetSession(ctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != first.ID || got.ThreadID != th.ID || got.Model != "gpt-4.1" || got.SystemPrompt != "be brief" ||
		string(got.Settings) != `{"thinking":"low"}` || !got.CreatedAt.Equal(first.CreatedAt) {
		t.Errorf("GetSession = %+v, want %+v", got, first)
	}
	if err := db.AppendEntries(ctx, first.ID, []transcript.Entry{transcript.MessageEntry(0, llm.UserText("old"))}); err != nil {
		t.Fatal(err)
	}

	// !reset: a new current session; the old one keeps its history.
	second, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "o3"})
	if err != nil {
		t.Fatal(err)
	}
	if second.ID == first.ID {
		t.Fatal("second session has the first one's id")
	}
	cur, _ := db.ThreadByID(ctx, th.ID)
	if cur.SessionID != second.ID {
		t.Errorf("thread's session after reset = %q, want %q", cur.SessionID, second.ID)
	}
	if old := load(t, db, first.ID); len(old) != 1 || old[0].Message.TextContent() != "old" {
		t.Errorf("old session after reset has %+v, want its one entry", old)
	}
	if n := len(load(t, db, second.ID)); n != 0 {
		t.Errorf("new session has %d entries, want 0", n)
	}

	if err := db.SetSessionModel(ctx, second.ID, "gpt-5"); err != nil {
		t.Fatal(err)
	}
	if s, _ := db.GetSession(ctx, second.ID); s.Model != "gpt-5" {
		t.Errorf("model after SetSessionModel = %q, want gpt-5", s.Model)
	}
	if err := db.SetSessionModel(ctx, "nope", "x"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("SetSessionModel(unknown) = %v, want ErrNotFound", err)
	}
	if _, err := db.GetSession(ctx, "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("GetSession(unknown) = %v, want ErrNotFound", err)
	}
	if _, err := db.CreateSession(ctx, 12345, storage.SessionInit{}); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("CreateSession(unknown thread) = %v, want ErrNotFound", err)
	}
}

// Only threads a person wrote in lately are recent: a reconnect catches up on
// them and not on the dormant or closed ones, however many.
func TestRecentThreads(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	db := openDB(t, sqlite.WithClock(clock.now))
	thread := func(platform, id string) storage.Thread {
		th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: platform, Team: "T", Channel: "C", Thread: id}, storage.ThreadInit{})
		if err != nil {
			t.Fatal(err)
		}
		return th
	}
	dormant := thread("slack", "1.0")
	written := thread("slack", "2.0")
	closed := thread("slack", "3.0")
	other := thread("discord", "4")
	clock.advance(48 * time.Hour)
	fresh := thread("slack", "5.0")
	if _, _, err := db.AcceptInbound(ctx, storage.Inbound{Platform: "slack", EventID: "Ev1", Channel: "C",
		MessageID: "2.5", ThreadID: written.ID, Text: "hi", Mode: storage.ModePrompt}); err != nil {
		t.Fatal(err)
	}
	if err := db.SetThreadState(ctx, closed.ID, storage.ThreadClosed); err != nil {
		t.Fatal(err)
	}
	// A redelivery of old input (a catch-up) is not new activity: it changes nothing.
	clock.advance(time.Hour)
	if _, dup, err := db.AcceptInbound(ctx, storage.Inbound{Platform: "slack", EventID: "Ev1", Channel: "C",
		MessageID: "2.5", ThreadID: written.ID, Text: "hi", Mode: storage.ModePrompt}); err != nil || !dup {
		t.Fatalf("AcceptInbound again = dup %v, err %v; want a duplicate", dup, err)
	}

	got, err := db.RecentThreads(ctx, "slack", clock.t.Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, th := range got {
		ids = append(ids, th.ID)
	}
	if want := []int64{written.ID, fresh.ID}; !slices.Equal(ids, want) {
		t.Errorf("RecentThreads = %v, want %v (not dormant %d, closed %d, nor discord's %d)", ids, want, dormant.ID, closed.ID, other.ID)
	}
	if w := got[0]; !w.ActiveAt.Equal(clock.t.Add(-time.Hour)) {
		t.Errorf("written thread active at %v, want the first acceptance %v", w.ActiveAt, clock.t.Add(-time.Hour))
	}

	// Someone writes in the closed thread: it exists after all.
	if _, _, err := db.AcceptInbound(ctx, storage.Inbound{Platform: "slack", EventID: "Ev2", Channel: "C",
		MessageID: "3.5", ThreadID: closed.ID, Text: "back", Mode: storage.ModePrompt}); err != nil {
		t.Fatal(err)
	}
	if th, _ := db.ThreadByID(ctx, closed.ID); th.State != storage.ThreadActive || !th.ActiveAt.Equal(clock.t) {
		t.Errorf("closed thread after input = %s active at %v, want active at %v", th.State, th.ActiveAt, clock.t)
	}
}
