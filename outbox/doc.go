// Package outbox sends everything the bot writes to one chat platform, inside
// that platform's rate limits, across all threads at once.
//
// One Outbox wraps one chat.Adapter. Its methods (Post, Edit, React, Upload,
// SetStatus) never block: they queue an operation and return, so platform
// listeners and session event sinks can call them freely. A dispatcher
// goroutine sends the queue through a bounded number of in-flight adapter
// calls.
//
// Ordering. Within a thread, posts and uploads go out in call order; an edit
// goes out only after its message's post succeeded; reactions on one message
// keep call order; and at most one call per thread is in flight, so nothing of
// a thread overtakes an earlier call that is still on the wire. Status updates
// have a lane of their own beside it (one call per thread at a time, at most
// two across threads, outside Workers), so that a status never delays a post.
// Different threads proceed in parallel.
//
// Coalescing. Edits of one message are merged while they wait: only the latest
// text is sent, with the highest priority among the merged requests. An edit
// of a message whose post has not gone out yet just changes the post's text.
// Status updates of a thread are merged the same way: only the latest waiting
// one is sent. A stream of any number of edits therefore costs about one call
// per EditPerMessage window.
//
// Buttons. SetActions gives a message its buttons (chat.Actioner): an edit
// that carries the message's latest text, merged like any other edit; from
// then on every edit of the message carries them, because platforms replace
// text and buttons together. Buttons set before the post went out follow it
// in an edit.
//
// Budgets. Every call draws from token buckets (Limits): per channel for
// posts, per message and per channel and per workspace for edits, one for
// status updates, and one for all requests. Low-priority operations (streaming edits) may not take a
// bucket's last tokens, so finals, notices and acknowledgements (High) always
// find capacity; among operations that can go, higher priority goes first,
// then the oldest. A *chat.RateLimitError from the platform pauses the
// operation's budgets (all of them when Global) for its RetryAfter and the
// operation is tried again: nothing but status updates is dropped for rate
// limits. A rate-limited status is dropped (the thread's next one waits out
// the pause), and Flush and Close do not wait for status updates. Other
// transient failures are retried a few times with backoff; a permanent
// failure is logged and reported through onPosted and Message.Wait, and later
// edits of a message whose post failed are dropped — except a final edit
// (EditFinal), whose text is then posted as a new message, as is the text of
// a final edit the platform refuses.
//
// Duplicates. A post whose call failed without an answer (a timeout) may
// have been created all the same; with a chat.OncePoster the retry carries
// the same key and says it is one, so the adapter can return the message
// already there instead of posting it twice.
//
// Loss. Flush waits until everything queued before it was sent or has
// failed. Close stops accepting work, flushes, and stops the dispatcher; when
// its context ends first, the remaining operations fail with ErrClosed.
package outbox
