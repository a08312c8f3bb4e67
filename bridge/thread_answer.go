package bridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"math"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/internal/crashpoint"
	"github.com/threadsmith/threadsmith/outbox"
	"github.com/threadsmith/threadsmith/storage"
)

// A run's answers — the one posted while it goes on, when input joined it or
// a notice came, and the closing one with the footer that ends it — must
// reach the thread even if the process dies right after the model finished.
// The outbox holds them in memory only, so the thread stores them first
// (storage.PendingPostStore), in one write, with an idempotency key each;
// the outbox posts them with that key, and each is marked when the platform
// answered. At start, what was stored and never marked is posted again with
// the same key and Retry (recoverAnswers).
//
// A crash after the platform accepted a post but before its mark would
// repeat it. That is bounded by the key: Slack's adapter looks for the bot's
// message carrying the key in the thread before posting again, Discord's
// nonce (enforce_nonce) returns the message already made within a few
// minutes of the first attempt. Only a Discord restart slower than that can
// show an answer twice.

// mentionRoom is what the adapter's mention of a person in front of a
// message takes at most ("<@" + a 20-digit Discord id or a Slack id + "> "),
// left free of the platform's limit when the answer is split.
const mentionRoom = 32

// postAnswer stores a run's answer messages, then posts them (an answer
// the view returned, on the owner: as the run ends, or as the session's events
// show an answer while it goes on). notify is the person the first message
// mentions, if any; it is not stored, so an answer posted again after a
// crash mentions nobody.
func (t *thread) postAnswer(threadID, runID int64, chunks []string, notify string) {
	// The status message's final text goes to storage first, so that a
	// crash from here on shows it (marked interrupted), not "working…".
	t.saver.flush()
	if len(chunks) == 0 {
		return
	}
	posts := make([]storage.PendingPost, len(chunks))
	for i, c := range chunks {
		posts[i] = storage.PendingPost{ThreadID: threadID, RunID: runID, Key: newPostKey(), Text: c}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	ids, err := t.store.RecordPendingPosts(ctx, posts)
	cancel()
	if errors.Is(err, storage.ErrFenced) {
		t.log.Warn("not posting an answer: another replica took the thread over", "err", err)
		return
	}
	if err != nil {
		t.log.Warn("storing the answer before posting it; posting it all the same", "err", err)
		postAnswerPlain(t.p.Outbox, t.ref, viewAnswer{runID: runID, chunks: chunks, notify: notify})
		return
	}
	crashpoint.Hit(crashpoint.Answered)
	for i := range posts {
		posts[i].ID = ids[i]
		n := ""
		if i == 0 {
			n = notify
		}
		sendStored(t.p.Outbox, t.b.cfg.Store, t.ref, posts[i], false, n, t.log)
	}
}

// sendStored posts a stored message with its key and marks it when the
// platform answered. again says an earlier process may have posted it;
// notify is the person it mentions ("" for nobody).
func sendStored(out *outbox.Outbox, store storage.PendingPostStore, ref chat.ThreadRef, pp storage.PendingPost, again bool, notify string, log *slog.Logger) {
	key := chat.PostKey{ID: pp.Key, Notify: notify}
	if again {
		key.Retry, key.First = true, pp.CreatedAt
	}
	out.PostKeyed(ref, pp.Text, outbox.High, key, func(id string, err error) {
		if errors.Is(err, outbox.ErrClosed) || errors.Is(err, outbox.ErrWithdrawn) {
			return // not sent: posted at the next start, or by the thread's new owner
		}
		if err == nil {
			crashpoint.Hit(crashpoint.Posted)
		}
		// Refused for good (err != nil): marked too, or it would be
		// tried at every start.
		// Marked again while storage is unavailable (a database restart):
		// unmarked, it would be posted a second time by the thread's next
		// owner.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if merr := whileUnavailable(ctx, log, "recording that an answer was posted", func() error {
			return store.MarkPosted(ctx, pp.ID, id)
		}); merr != nil {
			log.Warn("recording that an answer was posted; it may be posted again at the next start", "err", merr)
		}
	})
}

// recoverAnswers posts again, at start, the closing messages the previous
// process stored and never saw accepted, in the order they were stored.
// Those stored since then (this start's notices) are posted for the first
// time: no look for an earlier copy.
// threadID limits it to one thread (a replica's takeover); 0 is every thread.
// since is storedBefore's answer, taken before those notices were stored.
func (b *Bridge) recoverAnswers(ctx context.Context, since int64, threadID int64) {
	posts, err := b.cfg.Store.UnpostedPosts(ctx)
	if err != nil {
		b.log.Error("loading answers not yet posted", "err", err)
		return
	}
	n := 0
	for _, pp := range posts {
		p := b.platforms[pp.Thread.Platform]
		if p == nil || (threadID != 0 && pp.ThreadID != threadID) {
			continue
		}
		sendStored(p.Outbox, b.cfg.Store, refOf(pp.Thread), pp, pp.ID <= since, "", b.log)
		n++
	}
	if n > 0 {
		b.log.Info("posting answers a previous process did not see accepted", "count", n)
	}
}

// storedBefore returns the largest id of the posts stored and not yet
// posted, so that recoverAnswers tells those (which an earlier process may
// have posted) from the notices stored after it (ids grow): by id, not by
// the time each was stored, which was read on a clock that may have stepped
// since, or on another replica's. When the store cannot say, every post
// counts as stored before (looked for on the platform before it is posted).
func (b *Bridge) storedBefore(ctx context.Context) int64 {
	posts, err := b.cfg.Store.UnpostedPosts(ctx)
	if err != nil {
		return math.MaxInt64
	}
	var last int64
	for _, pp := range posts {
		last = max(last, pp.ID)
	}
	return last
}

// newPostKey is a post's idempotency key: 24 hex characters (Discord's
// nonce takes 25 at most).
func newPostKey() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
