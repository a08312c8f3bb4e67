package chaos

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStaleOwnerPostsNothingAfterTakeover: a replica that stops (SIGSTOP:
// a long GC pause, a frozen VM) past its lease while its answer waits in its
// outbox (Slack's rate limit made it wait) loses the thread to another
// replica, which posts the stored answer and the interrupted notice. When
// the stale replica continues, its outbox must not post the answer again:
// the fences keep its writes out of the database, and nothing it had queued
// for the thread may reach Slack either.
func TestStaleOwnerPostsNothingAfterTakeover(t *testing.T) {
	if testing.Short() {
		t.Skip("runs replicas of the bot binary")
	}
	e := newEnv(t, setup{})
	e.gate = make(chan struct{})
	var rs []*replica
	for range 2 {
		r := e.addReplica()
		if err := r.start(); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	const ch = "C0STALE01"
	root := e.slack.Mention(ch, aliceID, "GATE TKN0001m00", "")
	if _, err := e.llm.WaitRequests(e.ctx, 1); err != nil {
		t.Fatal(err)
	}
	var owner string
	var fence int64
	err := e.poll("the run and its status message", 30*time.Second, 10*time.Millisecond, func() (bool, error) {
		var err error
		owner, fence, err = e.runLease(ch, root)
		return err == nil && e.botSays(ch, root, "working"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stale := replicaNamed(rs, owner)
	if stale == nil {
		t.Fatalf("lease owner %q is none of the replicas", owner)
	}

	// The answer's post is refused for 8 s; the owner stops meanwhile.
	const retryAfter = 8 * time.Second
	e.slack.RateLimitNext("chat.postMessage", retryAfter)
	close(e.gate)
	if err := e.poll("the answer to be rate limited", 30*time.Second, 10*time.Millisecond, func() (bool, error) {
		return e.slack.RateLimited() >= 1, nil
	}); err != nil {
		t.Fatal(err)
	}
	limitedAt := time.Now()
	if _, err := stale.pause(); err != nil {
		t.Fatal(err)
	}
	// The other replica takes the thread over and posts the stored answer
	// and the notice.
	takenOver := func() (bool, error) {
		now, err := e.leaseFence(ch, root)
		return now > fence, err
	}
	if err := e.poll("the takeover", e.s.ttl+10*time.Second, 10*time.Millisecond, takenOver); err != nil {
		// Stopped inside a transaction (a lease renewal holds the lease
		// row), the replica keeps its row lock, and the new owner's
		// acquisition waits for it until it continues.
		_ = stale.resume()
		if e.poll("the takeover after SIGCONT", 30*time.Second, 10*time.Millisecond, takenOver) == nil {
			t.Skipf("blocked by: a replica stopped inside a transaction on the lease row holds off the takeover until it continues (%v)", err)
		}
		t.Fatal(err)
	}
	if err := e.poll("the answer and the notice", 30*time.Second, 10*time.Millisecond, func() (bool, error) {
		return e.answers(ch, root) >= 1 && e.botSays(ch, root, "was interrupted"), nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, e.transcript(ch, root))
	}
	if err := stale.resume(); err != nil {
		t.Fatal(err)
	}
	// The stale replica's outbox would retry once the rate limit's wait is
	// over: give it that long, and a little more.
	deadline := time.Until(limitedAt.Add(retryAfter + 3*time.Second))
	_ = e.poll("a second answer", max(deadline, time.Second), 20*time.Millisecond, func() (bool, error) {
		return e.answers(ch, root) > 1, nil
	})
	if n := e.answers(ch, root); n != 1 {
		t.Errorf("a replica that lost a thread while stopped posted what its outbox held (answer posted %d times)\n%s", n, e.transcript(ch, root))
	}
	if err := stale.unexpectedExit(); err != nil {
		t.Fatal(err)
	}
}

// runLease is the lease of the thread that root starts in ch, while a run
// of it goes on: its owner and fence.
func (e *env) runLease(ch, root string) (owner string, fence int64, err error) {
	err = e.db.QueryRow(e.ctx, `SELECT l.owner, l.fence FROM thread_leases l JOIN threads t ON t.id = l.thread_id
		WHERE t.channel = $1 AND t.thread = $2 AND EXISTS (SELECT 1 FROM runs r WHERE r.thread_id = l.thread_id AND r.ended_at IS NULL)`,
		ch, root).Scan(&owner, &fence)
	return owner, fence, err
}

// leaseFence is the fence of the thread's lease now: larger than before once
// another replica took the thread.
func (e *env) leaseFence(ch, root string) (int64, error) {
	var fence int64
	err := e.db.QueryRow(e.ctx, `SELECT l.fence FROM thread_leases l JOIN threads t ON t.id = l.thread_id
		WHERE t.channel = $1 AND t.thread = $2`, ch, root).Scan(&fence)
	return fence, err
}

// replicaNamed is the replica whose process a lease owner names
// (host/pid/random, bridge.NewOwner), or nil.
func replicaNamed(rs []*replica, owner string) *replica {
	for _, r := range rs {
		if strings.Contains(owner, "/"+strconv.Itoa(r.pid())+"/") {
			return r
		}
	}
	return nil
}

// botSays reports whether a bot message in the thread contains s.
func (e *env) botSays(ch, root, s string) bool {
	for _, m := range e.slack.Messages(ch, root) {
		if m.User == e.slack.BotUserID() && strings.Contains(m.Text, s) {
			return true
		}
	}
	return false
}

// answers counts the bot's answer messages in the thread (not a cut-off
// run's status message).
func (e *env) answers(ch, root string) int {
	n := 0
	for _, m := range e.slack.Messages(ch, root) {
		if m.User == e.slack.BotUserID() && strings.Contains(m.Text, "ANS-") && !strings.Contains(m.Text, "_interrupted") {
			n++
		}
	}
	return n
}

// transcript is the thread as people see it, for failure messages.
func (e *env) transcript(ch, root string) string {
	var b strings.Builder
	for _, m := range e.slack.Messages(ch, root) {
		b.WriteString("--- " + m.TS + " " + m.User + "\n" + m.Text + "\n")
	}
	return b.String()
}
