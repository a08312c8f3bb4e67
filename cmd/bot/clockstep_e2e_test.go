package main

import (
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// An answer stored and posted, whose mark was lost to a crash, stored by a
// clock five minutes ahead of the one the bot starts again with (the clock
// stepped back meanwhile): the start finds it on Slack instead of posting it
// a second time, and marks it posted.
func TestAnswerStoredBeforeAClockStepBackIsNotPostedTwice(t *testing.T) {
	t.Parallel()
	e := newSlackFakes(t)
	e.start()
	e.llm.Handle(func(llmfake.Request) llmfake.Response { return llmfake.TextReply("THE ANSWER, once") })
	root := e.slack.Mention(slackChan, aliceID, "a question", "")
	e.waitText(slackChan, root, "THE ANSWER, once")
	e.waitText(slackChan, root, "⏱")
	path := filepath.Join(e.cfg.DataDir, sqlite.FileName)
	unposted := func() int {
		db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var n int
		if err := db.QueryRow(`SELECT count(*) FROM pending_posts WHERE done_at IS NULL`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	e.waitFor("the answer marked posted", func() bool { return unposted() == 0 })
	e.stop()

	// What a crash between the post and its mark leaves, stored five
	// minutes later than the clock now says.
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := db.Exec(`UPDATE pending_posts SET done_at = NULL, message_id = NULL, created_at = created_at + 300000 WHERE text LIKE 'THE ANSWER%'`)
	if n, _ := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("unmarking the answer: %d rows, %v", n, err)
	}
	db.Close()
	posts := len(e.slack.CallsTo("chat.postMessage"))

	e.start()
	poll(t, "the recovered answer marked posted", func() bool { return unposted() == 0 })
	if n := strings.Count(e.threadText(slackChan, root), "THE ANSWER, once"); n != 1 {
		t.Errorf("the answer shows %d times, want once:\n%s", n, e.transcript(slackChan, root))
	}
	if n := len(e.slack.CallsTo("chat.postMessage")) - posts; n != 0 {
		t.Errorf("chat.postMessage called %d times at the start, want none (the answer went through before)", n)
	}
}
