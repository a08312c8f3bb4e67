package bridge

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

func TestInterruptedStatusKeepsWhatTheMessageShowed(t *testing.T) {
	t.Parallel()
	tests := []struct{ saved, want string }{
		{"⏳ working… · `app` · `bot/x`\n\n✓ `ls` · 3ms\n\npartial answer", "✓ `ls` · 3ms\n\npartial answer\n\n⚠️ _interrupted: the bot restarted_"},
		{"⏳ working… · `app` · `bot/x`", "⚠️ _interrupted: the bot restarted_"},
		{"✓ `read` `a.go` · 1ms", "✓ `read` `a.go` · 1ms\n\n⚠️ _interrupted: the bot restarted_"},
	}
	for _, tt := range tests {
		if got := interruptedStatus(tt.saved); got != tt.want {
			t.Errorf("interruptedStatus(%q) = %q, want %q", tt.saved, got, tt.want)
		}
	}
}

func TestRecentSetForgetsTheOldest(t *testing.T) {
	t.Parallel()
	var r recentSet
	r.add([]string{"a", "b"})
	if !r.hasAny([]string{"x", "b"}) || r.hasAny([]string{"x"}) {
		t.Fatal("recentSet does not answer for what it holds")
	}
	for i := range recentSetSize {
		r.add([]string{"k" + strconv.Itoa(i)})
	}
	if r.hasAny([]string{"a"}) || r.hasAny([]string{"b"}) {
		t.Fatal("recentSet kept keys beyond its size")
	}
	if !r.hasAny([]string{"k" + strconv.Itoa(recentSetSize-1)}) || len(r.keys) != recentSetSize {
		t.Fatalf("recentSet holds %d keys, want %d with the newest", len(r.keys), recentSetSize)
	}
}

// A run's answer is stored before it goes to the outbox and marked once the
// platform took it; an answer a crash left stored and unmarked is posted at
// the next start, once, and marked.
func TestAnswerIsStoredUntilPostedAndPostedAgainAtStart(t *testing.T) {
	t.Parallel()
	// What a process killed between "answer stored" and "posted" leaves.
	seed := func(cfg *Config, _ *Platform) {
		db := any(cfg.Store).(*sqlite.DB)
		ctx := context.Background()
		th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "test", Team: "T1", Channel: "C1", Thread: "old"}, storage.ThreadInit{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = db.RecordPendingPosts(ctx, []storage.PendingPost{{ThreadID: th.ID, Key: "k-left-by-a-crash", Text: "the answer the crash held back"}})
		if err != nil {
			t.Fatal(err)
		}
	}
	r := newRig(t, seed)
	old := testThread("old")
	r.waitText(old, "the answer the crash held back")
	unposted := func() bool {
		posts, err := r.db.UnpostedPosts(r.ctx)
		return err == nil && len(posts) == 0
	}
	r.waitUntil("the recovered answer is marked posted", unposted)

	r.llm.Push(llmfake.TextReply("THE-ANSWER of this run"))
	th := testThread("new")
	r.say(th, alice, "hello", true)
	r.waitRuns(th, 1)
	r.waitUntil("the answer is marked posted", unposted)
	r.stop(10 * time.Second)

	if got := strings.Count(r.chat.Transcript(old), "the answer the crash held back"); got != 1 {
		t.Errorf("the recovered answer shows %d times, want once", got)
	}
	if got := strings.Count(r.chat.Transcript(th), "THE-ANSWER"); got != 1 {
		t.Errorf("the answer shows %d times, want once:\n%s", got, r.chat.Transcript(th))
	}
	// Both went through storage, each with its platform id.
	raw, err := sql.Open("sqlite", "file:"+r.db.Path()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rows, err := raw.Query(`SELECT id, text, coalesce(message_id, '') FROM pending_posts ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var id int64
		var text, msg string
		if err := rows.Scan(&id, &text, &msg); err != nil {
			t.Fatal(err)
		}
		if msg == "" {
			t.Errorf("stored post %d (%q) has no platform id", id, text)
		}
		got = append(got, text)
	}
	if len(got) != 2 || got[0] != "the answer the crash held back" || !strings.HasPrefix(got[1], "THE-ANSWER of this run") || !strings.Contains(got[1], "⏱") {
		t.Errorf("stored posts %q: want the recovered one, then this run's answer with its footer", got)
	}
}

// An answer posted while its run goes on — input queued during the run joined
// it, so the answer to the first request goes out before the run ends — is
// stored before it is posted too, with the run's id, as the closing one is:
// a crash right after the model wrote it must not lose it.
func TestAnswerPostedMidRunIsStoredFirst(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	g := newGate(t)
	var n atomic.Int32
	r.llm.Handle(func(llmfake.Request) llmfake.Response {
		if n.Add(1) == 1 {
			g.hold()
			return llmfake.TextReply("FIRST-ANSWER to the long job")
		}
		return llmfake.TextReply("SECOND-ANSWER after the rename")
	})
	th := testThread("67.1")
	r.say(th, alice, "long job", true)
	r.waitArrived(g)
	r.say(th, bob, "then rename the package", false)
	r.say(th, alice, "!status", false)
	r.waitText(th, "• Queue: 0 steer, 1 follow-up")
	g.release()
	r.waitRuns(th, 1)
	r.waitUntil("every answer is marked posted", func() bool {
		posts, err := r.db.UnpostedPosts(r.ctx)
		return err == nil && len(posts) == 0
	})
	r.stop(10 * time.Second)

	raw, err := sql.Open("sqlite", "file:"+r.db.Path()+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	rows, err := raw.Query(`SELECT text, run_id, coalesce(message_id, '') FROM pending_posts ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var text, msg string
		var run sql.NullInt64
		if err := rows.Scan(&text, &run, &msg); err != nil {
			t.Fatal(err)
		}
		if msg == "" || run.Int64 == 0 {
			t.Errorf("stored post %q: platform id %q, run %d", text, msg, run.Int64)
		}
		got = append(got, text)
	}
	if len(got) != 2 || got[0] != "FIRST-ANSWER to the long job" || !strings.HasPrefix(got[1], "SECOND-ANSWER") || !strings.Contains(got[1], "⏱") {
		t.Errorf("stored posts %q: want the answer posted mid-run, then the closing one with its footer", got)
	}
}
