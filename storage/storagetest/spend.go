package storagetest

import (
	"strconv"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
)

// A thread's spend: every run of it, whoever asked, ended or going; what
// no run wrote is not counted.
//
// A person's spend since a time: the runs their input started that ended
// since then, whole, and the runs still going, with their replies so far, on
// every thread; others' runs, runs no input started, runs that ended before
// and the same id on another platform are not theirs. It survives a reopen.
func testAuthorSpend(t *testing.T, s *suite) {
	type session struct {
		th  storage.Thread
		id  string
		seq int64
	}
	open := func(ts string) *session {
		th := s.thread("slack", ts)
		return &session{th: th, id: s.session(th).ID}
	}
	write := func(ss *session, msgs ...llm.Message) {
		t.Helper()
		for _, m := range msgs {
			s.append(ss.id, transcript.MessageEntry(ss.seq, m))
			ss.seq++
		}
	}
	reply := func(cost float64) llm.Message {
		u := llm.Usage{Input: 10, Output: 1}
		if cost > 0 {
			u.Cost = &llm.Cost{Total: cost}
		}
		return llm.Message{Role: llm.RoleAssistant, Model: "m", StopReason: llm.StopReasonStop, Content: []llm.Content{llm.Text("ok")}, Usage: &u}
	}
	start := func(ss *session, author string, replies ...llm.Message) int64 {
		t.Helper()
		var in int64
		var prompt llm.Message
		if author != "" {
			in, _ = s.accept(storage.Inbound{ThreadID: ss.th.ID, MessageID: ss.th.Key.Thread + strconv.FormatInt(ss.seq, 10), AuthorID: author})
			prompt = user("do it", strconv.FormatInt(in, 10))
		} else {
			prompt = llm.UserText("queued")
		}
		run, err := s.db.StartRun(s.ctx, ss.th.ID, ss.id, in)
		if err != nil {
			t.Fatal(err)
		}
		write(ss, append([]llm.Message{prompt}, replies...)...)
		return run
	}
	finish := func(run int64) {
		t.Helper()
		if err := s.db.FinishRun(s.ctx, run, storage.RunDone); err != nil {
			t.Fatal(err)
		}
	}
	spend := func(platform, author string, since time.Time) storage.Usage {
		t.Helper()
		u, err := s.db.AuthorSpend(s.ctx, platform, author, since)
		if err != nil {
			t.Fatalf("AuthorSpend(%s, %s): %v", platform, author, err)
		}
		return u
	}
	threadSpend := func(ss *session) storage.Usage {
		t.Helper()
		u, err := s.db.ThreadSpend(s.ctx, ss.th.ID)
		if err != nil {
			t.Fatalf("ThreadSpend: %v", err)
		}
		return u
	}
	a, b := open("20.1"), open("20.2")
	write(a, reply(4)) // before any run: no run's
	finish(start(a, "U1", reply(0.5), reply(0.25)))
	finish(start(b, "U2", reply(1)))
	finish(start(a, "", reply(2))) // queued input: nobody's
	s.clock.Advance(time.Hour)
	today := s.clock.Now().Add(-time.Minute)
	if u := spend("slack", "U1", today); u != (storage.Usage{}) {
		t.Errorf("U1 since after their run ended = %+v, want nothing", u)
	}
	if u := spend("slack", "U1", today.Add(-2*time.Hour)); u.Cost != 0.75 || u.Replies != 2 {
		t.Errorf("U1 over both hours = %+v, want 0.75 over 2 replies", u)
	}
	running := start(b, "U1", reply(0.125), reply(0)) // the second: a model without a price
	want := storage.Usage{Replies: 2, Input: 20, Output: 2, Cost: 0.125}
	if u := spend("slack", "U1", today); u != want {
		t.Errorf("U1 with a run going = %+v, want %+v", u, want)
	}
	if u := spend("discord", "U1", today.Add(-2*time.Hour)); u != (storage.Usage{}) {
		t.Errorf("U1 of another platform = %+v, want nothing", u)
	}
	if u := threadSpend(b); u.Cost != 1.125 || u.Replies != 3 {
		t.Errorf("thread b with a run going = %+v, want 1.125 over 3 replies", u)
	}
	if u := threadSpend(a); u.Cost != 2.75 || u.Replies != 3 {
		t.Errorf("thread a = %+v, want 2.75 over 3 replies (every run's, whoever asked)", u)
	}
	if u := spend("slack", "U2", today); u != (storage.Usage{}) {
		t.Errorf("U2 since after their run = %+v, want nothing (U1's run in U2's thread is U1's)", u)
	}
	write(b, reply(0.25))
	finish(running)
	want = storage.Usage{Replies: 3, Input: 30, Output: 3, Cost: 0.375}
	if u := spend("slack", "U1", today); u != want {
		t.Errorf("U1 after the run ended = %+v, want %+v (counted once)", u, want)
	}
	if u := threadSpend(b); u.Cost != 1.375 || u.Replies != 4 {
		t.Errorf("thread b after the run ended = %+v, want 1.375 over 4 replies", u)
	}
	s.db.Close()
	s.db = s.reopen()
	if u := spend("slack", "U1", today); u != want {
		t.Errorf("U1 after a reopen = %+v, want %+v", u, want)
	}
	if u, err := s.db.ThreadSpend(s.ctx, 99999); err != nil || u != (storage.Usage{}) {
		t.Errorf("an unknown thread's spend = %+v, %v; want nothing", u, err)
	}
}
