package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/config"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
	"github.com/threadsmith/threadsmith/storage/sqlite"
	"github.com/threadsmith/threadsmith/workspace/diskuse"
	"github.com/threadsmith/threadsmith/workspace/diskuse/disktest"
)

// fullNoticeText is the start of what a thread is told when its input
// cannot be stored (bridge's fullNotice).
const fullNoticeText = "I can't take messages right now: the bot's disk is full"

// A data_dir whose filesystem fills up (a small tmpfs, as root; skipped
// otherwise), end to end through the program on the fake Slack, which
// delivers again what was not acknowledged, as Slack does. Filled by another
// writer, the disk's reserve goes to the database: a reply is stored and
// answered. Filled past the reserve, a reply and a new thread's mention are
// not acknowledged, each thread is told once, and once space is freed the
// platform's next delivery is stored and answered, once each: nothing lost,
// nothing twice, no restart.
func TestFullDataDirRefusesInputThenAnswersIt(t *testing.T) {
	t.Parallel()
	const reserve = 4 << 20
	const redelivery = 2 * time.Second
	e := newSlackFakes(t, withFake(slackfake.WithRedelivery(redelivery)), withConfig(func(c *config.Config) {
		c.Sandbox.DiskReserve = reserve
	}))
	e.cfg.DataDir = disktest.Small(t, 48<<20)
	e.start()
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		user := lastUserText(r)
		for _, tag := range []string{"A1", "A2", "A3", "B1"} {
			if strings.Contains(user, "msg "+tag) {
				return llmfake.TextReply("answered " + tag)
			}
		}
		return llmfake.TextReply("answered something else")
	})
	balloon := filepath.Join(e.cfg.DataDir, diskuse.BalloonName)
	if _, err := os.Stat(balloon); err != nil {
		t.Fatalf("the disk's reserve was not set aside at start: %v", err)
	}
	rootA := e.slack.Mention(slackChan, aliceID, "msg A1", "")
	e.waitText(slackChan, rootA, "answered A1")
	e.waitFor("A1's run recorded", func() bool { return countFooters(e.threadText(slackChan, rootA)) == 1 })

	// fill leaves the disk full, with the database's write-ahead log
	// emptied first: its next commit needs new blocks, as a database grown
	// into the last free space does.
	var fillers []string
	fill := func() {
		t.Helper()
		truncateWAL(t, filepath.Join(e.cfg.DataDir, sqlite.FileName))
		f := filepath.Join(e.cfg.DataDir, "filler"+string(rune('0'+len(fillers))))
		fillers = append(fillers, f)
		disktest.Fill(t, f)
	}

	// Another writer fills the disk: the reserve is handed to the database.
	fill()
	e.slack.UserMessage(slackChan, aliceID, "msg A2", rootA)
	e.waitText(slackChan, rootA, "answered A2")
	e.waitFor("A2's run recorded", func() bool { return countFooters(e.threadText(slackChan, rootA)) == 2 })
	if _, err := os.Stat(balloon); !os.IsNotExist(err) {
		t.Errorf("the reserve's file is still there on a full disk: %v", err)
	}

	// Filled past the reserve: input is refused, not acknowledged.
	fill()
	tsA3 := e.slack.UserMessage(slackChan, aliceID, "msg A3", rootA)
	rootB := e.slack.Mention(slackChan, aliceID, "msg B1", "")
	refused := time.Now()
	poll(t, "the reply and the mention delivered again", func() bool {
		return len(e.slack.DeliveriesFor(slackChan, tsA3)) >= 2 && len(e.slack.DeliveriesFor(slackChan, rootB)) >= 3
	})
	e.waitText(slackChan, rootA, fullNoticeText)
	e.waitText(slackChan, rootB, fullNoticeText)
	for _, d := range append(e.slack.DeliveriesFor(slackChan, tsA3), e.slack.DeliveriesFor(slackChan, rootB)...) {
		if d.Acked {
			t.Errorf("a delivery was acknowledged while the disk was full: %+v", d)
		}
	}
	if strings.Contains(e.threadText(slackChan, rootA), "answered A3") {
		t.Fatal("a message was answered that could not be stored")
	}

	// Space returns: the next delivery is stored and answered.
	for _, f := range fillers {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	freed := time.Now()
	e.waitText(slackChan, rootA, "answered A3")
	e.waitText(slackChan, rootB, "answered B1")
	t.Logf("refused for %s; answered %s after space was freed (redelivery every %s)",
		freed.Sub(refused).Round(time.Millisecond), time.Since(freed).Round(time.Millisecond), redelivery)
	poll(t, "the reserve set aside again", func() bool { _, err := os.Stat(balloon); return err == nil })

	for root, tags := range map[string][]string{rootA: {"A1", "A2", "A3"}, rootB: {"B1"}} {
		text := e.threadText(slackChan, root)
		for _, tag := range tags {
			if n := strings.Count(text, "answered "+tag); n != 1 {
				t.Errorf("%s answered %d times, want once:\n%s", tag, n, e.transcript(slackChan, root))
			}
		}
		if n := strings.Count(text, fullNoticeText); n != map[string]int{rootA: 1, rootB: 1}[root] {
			t.Errorf("thread %s told of the full disk %d times, want once:\n%s", root, n, e.transcript(slackChan, root))
		}
	}
	for _, tag := range []string{"A1", "A2", "A3", "B1"} {
		n := 0
		for _, r := range e.llm.Requests() {
			if strings.Contains(lastUserText(r), "msg "+tag) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("msg %s reached the model %d times, want once", tag, n)
		}
	}
}

// truncateWAL checkpoints the database at path and empties its write-ahead
// log (SQLite does the same past journal_size_limit), trying again while the
// bot's own connections keep it busy.
func truncateWAL(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var busy, logPages, done int
		err := db.QueryRow("PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logPages, &done)
		if err == nil && busy == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("emptying the write-ahead log: busy %d, %v", busy, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// poll waits up to a minute for cond, looking every 20 ms.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(time.Minute)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// The database's own growth fills the disk during a run (a small tmpfs, as
// root; skipped otherwise): the run's entries, refused for want of room, get
// the disk's reserve and are stored; the answer is posted and recorded once,
// and the thread is not told that part of its conversation was lost.
func TestRunOnAFillingDiskKeepsItsConversation(t *testing.T) {
	t.Parallel()
	e := newSlackFakes(t, withConfig(func(c *config.Config) { c.Sandbox.DiskReserve = 4 << 20 }))
	e.cfg.DataDir = disktest.Small(t, 48<<20)
	e.start()
	release := make(chan struct{})
	long := strings.Repeat("a long answer that the database must find room for. ", 400)
	e.llm.Handle(func(r llmfake.Request) llmfake.Response {
		<-release
		return llmfake.TextReply("ANSWER C1 " + long)
	})
	root := e.slack.Mention(slackChan, aliceID, "msg C1", "")
	if _, err := e.llm.WaitRequests(e.ctx, 1); err != nil {
		t.Fatal(err)
	}
	// The disk fills while the model thinks.
	truncateWAL(t, filepath.Join(e.cfg.DataDir, sqlite.FileName))
	disktest.Fill(t, filepath.Join(e.cfg.DataDir, "filler"))
	close(release)
	e.waitText(slackChan, root, "ANSWER C1")
	e.waitFor("the run recorded", func() bool { return countFooters(e.threadText(slackChan, root)) == 1 })
	text := e.threadText(slackChan, root)
	if strings.Contains(text, "couldn't save part of this conversation") {
		t.Errorf("the thread was told part of its conversation was lost:\n%s", e.transcript(slackChan, root))
	}
	if n := strings.Count(text, "ANSWER C1"); n != 1 {
		t.Errorf("the answer shows %d times, want once:\n%s", n, e.transcript(slackChan, root))
	}
	db, err := sql.Open("sqlite", "file:"+filepath.Join(e.cfg.DataDir, sqlite.FileName)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var stored int
	if err := db.QueryRow(`SELECT count(*) FROM entries WHERE payload LIKE '%ANSWER C1%'`).Scan(&stored); err != nil || stored != 1 {
		t.Errorf("the answer's entry stored %d times (%v), want once", stored, err)
	}
}
