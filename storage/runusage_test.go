package storage_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
)

// Each run's replies are summed into its own usage record when it ends:
// tokens, cost and the models that replied; the next run of the session
// counts only what came after, and a run the process died in gets its record
// when it is marked interrupted.
func TestRunUsageIsRecordedWhenTheRunEnds(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), storage.FileName)
	db := openAt(t, path)
	th := newThread(t, db, "slack", "7.1")
	s, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	seq := int64(0)
	write := func(msgs ...llm.Message) {
		t.Helper()
		var es []transcript.Entry
		for _, m := range msgs {
			es = append(es, transcript.MessageEntry(seq, m))
			seq++
		}
		if err := db.AppendEntries(ctx, s.ID, es); err != nil {
			t.Fatalf("AppendEntries: %v", err)
		}
	}
	input := func(msg string) (int64, llm.Message) {
		id, _ := accept(t, db, storage.Inbound{Platform: "slack", Channel: "C1", MessageID: msg, ThreadID: th.ID, AuthorID: "U1", Mode: storage.ModePrompt})
		m := llm.UserText("do " + msg)
		m.InputID = strconv.FormatInt(id, 10)
		return id, m
	}
	reply := func(model string, u llm.Usage) llm.Message {
		return llm.Message{Role: llm.RoleAssistant, Model: model, StopReason: llm.StopReasonStop, Content: []llm.Content{llm.Text("ok")}, Usage: &u}
	}

	// Before the first run: a reply outside any run (history from an earlier
	// binary) is not the first run's.
	write(reply("old", llm.Usage{Input: 9999}))
	in1, u1 := input("1.2")
	run1, err := db.StartRun(ctx, th.ID, s.ID, in1)
	if err != nil {
		t.Fatal(err)
	}
	write(u1,
		reply("model-a", llm.Usage{Input: 100, Output: 10, CacheRead: 800, CacheWrite: 50, Cost: &llm.Cost{Total: 0.5}}),
		llm.Message{Role: llm.RoleToolResult, ToolCallID: "c1", Content: []llm.Content{llm.Text("out")}},
		reply("model-b", llm.Usage{Input: 20, Output: 2, CacheRead: 900, Cost: &llm.Cost{Total: 0.25}}),
		reply("model-a", llm.Usage{Input: 1, Output: 1}),
		llm.Message{Role: llm.RoleAssistant, StopReason: llm.StopReasonError}) // no usage
	if _, err := db.RunUsageOf(ctx, run1); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("usage of a running run = %v, want ErrNotFound", err)
	}
	if err := db.FinishRun(ctx, run1, storage.RunDone); err != nil {
		t.Fatal(err)
	}
	want1 := storage.RunUsage{Usage: storage.Usage{Replies: 3, Input: 121, Output: 13, CacheRead: 1700, CacheWrite: 50, Cost: 0.75}, Models: []string{"model-a", "model-b"}}
	if got, err := db.RunUsageOf(ctx, run1); err != nil || !reflect.DeepEqual(got, want1) {
		t.Errorf("run 1 usage = %+v, %v; want %+v", got, err, want1)
	}

	// A run without an input (queued input delivered by the session) counts
	// from where the previous one ended.
	run2, _ := db.StartRun(ctx, th.ID, s.ID, 0)
	write(llm.UserText("queued"), reply("model-b", llm.Usage{Input: 5, Output: 5}))
	if err := db.FinishRun(ctx, run2, storage.RunStopped); err != nil {
		t.Fatal(err)
	}
	want2 := storage.RunUsage{Usage: storage.Usage{Replies: 1, Input: 5, Output: 5}, Models: []string{"model-b"}}
	if got, err := db.RunUsageOf(ctx, run2); err != nil || !reflect.DeepEqual(got, want2) {
		t.Errorf("run 2 usage = %+v, %v; want %+v", got, err, want2)
	}

	// The process dies during run 3.
	in3, u3 := input("1.3")
	run3, _ := db.StartRun(ctx, th.ID, s.ID, in3)
	write(u3, reply("model-a", llm.Usage{Input: 7, Output: 3}))
	db.Close()
	db = openAt(t, path)
	if _, err := db.InterruptRuns(ctx); err != nil {
		t.Fatal(err)
	}
	want3 := storage.RunUsage{Usage: storage.Usage{Replies: 1, Input: 7, Output: 3}, Models: []string{"model-a"}}
	all, err := db.ThreadRunUsage(ctx, th.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantAll := map[int64]storage.RunUsage{run1: want1, run2: want2, run3: want3}
	if !reflect.DeepEqual(all, wantAll) {
		t.Errorf("ThreadRunUsage =\n %+v\nwant\n %+v", all, wantAll)
	}
	if other, err := db.ThreadRunUsage(ctx, newThread(t, db, "slack", "8.1").ID); err != nil || len(other) != 0 {
		t.Errorf("another thread's run usage = %v, %v; want none", other, err)
	}
}
