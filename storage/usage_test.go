package storage_test

import (
	"context"
	"math"
	"strconv"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
)

func TestUsageSumsRepliesByThreadAndByUser(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	th := newThread(t, db, "slack", "1.1")
	other := newThread(t, db, "slack", "2.2")
	in := func(th storage.Thread, user, msg string) string {
		id, _ := accept(t, db, storage.Inbound{Platform: "slack", Channel: "C1", MessageID: msg, ThreadID: th.ID, AuthorID: user, Mode: storage.ModePrompt})
		return strconv.FormatInt(id, 10)
	}
	reply := func(u llm.Usage) llm.Message {
		return llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonStop, Content: []llm.Content{llm.Text("ok")}, Usage: &u}
	}
	user := func(inputID string) llm.Message {
		m := llm.UserText("hi")
		m.InputID = inputID
		return m
	}
	write := func(th storage.Thread, msgs ...llm.Message) {
		s, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		var es []transcript.Entry
		for i, m := range msgs {
			es = append(es, transcript.MessageEntry(int64(i), m))
		}
		if err := db.AppendEntries(ctx, s.ID, es); err != nil {
			t.Fatalf("AppendEntries: %v", err)
		}
	}
	priced := llm.Usage{Input: 100, Output: 10, CacheRead: 800, CacheWrite: 100, Cost: &llm.Cost{Total: 0.5}}
	write(th, user(in(th, "U1", "1.2")), reply(priced), reply(llm.Usage{Input: 50, Output: 5}),
		user(in(th, "U2", "1.3")), reply(llm.Usage{Input: 10, Output: 1, Cost: &llm.Cost{Total: 0.25}}),
		llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonError}) // no usage: not a reply that counts
	write(th, user(in(th, "U1", "1.4")), reply(llm.Usage{Input: 1, Output: 1})) // after !reset
	write(other, user(in(other, "U1", "2.3")), reply(llm.Usage{Input: 1000, Output: 100, Cost: &llm.Cost{Total: 1}}))

	got, err := db.ThreadUsage(ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := storage.Usage{Replies: 4, Input: 161, Output: 17, CacheRead: 800, CacheWrite: 100, Cost: 0.75}
	if got != want {
		t.Errorf("ThreadUsage = %+v, want %+v", got, want)
	}
	if r := got.CacheHitRate(); math.Abs(r-800.0/1061) > 1e-9 {
		t.Errorf("CacheHitRate = %v, want %v", r, 800.0/1061)
	}
	u1, err := db.UserUsage(ctx, "slack", "U1")
	if err != nil {
		t.Fatal(err)
	}
	if want := (storage.Usage{Replies: 4, Input: 1151, Output: 116, CacheRead: 800, CacheWrite: 100, Cost: 1.5}); u1 != want {
		t.Errorf("UserUsage(U1) = %+v, want %+v", u1, want)
	}
	if u2, _ := db.UserUsage(ctx, "slack", "U2"); u2.Replies != 1 || u2.Cost != 0.25 {
		t.Errorf("UserUsage(U2) = %+v, want the one reply to U2's message", u2)
	}
}
