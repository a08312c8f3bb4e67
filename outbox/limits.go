package outbox

import "time"

// Rate is a token bucket: one token per Every, holding at most Burst. A zero
// Every means unlimited. Burst below 1 counts as 1.
type Rate struct {
	Every time.Duration
	Burst int
}

// PerSecond is n calls per second with bursts of burst (config files speak in
// calls per second). n <= 0 means unlimited.
func PerSecond(n float64, burst int) Rate {
	if n <= 0 {
		return Rate{}
	}
	return Rate{Every: time.Duration(float64(time.Second) / n), Burst: burst}
}

// PerWindow is a budget of at most n calls in any window of the given length
// that still allows a burst of burst calls at once. A plain bucket refilling
// n per window would let burst+n calls through in one window, so the refill is
// slowed to keep burst plus the refills within n: Every is window/(n-burst+1),
// rounded up so rounding never lets one call too many through.
//
// The platform counts calls as they arrive, the bucket as they leave: a
// call that spent longer on the wire than the next one would let n+1 land
// in one window of a bucket paced exactly. So Every carries a margin of
// window/(4k²) (k = n-burst+1; 78 ms for Discord's 5 edits per 5 s), small
// enough that a greedy sender still gets n calls into a window.
func PerWindow(n int, window time.Duration, burst int) Rate {
	if n <= 0 || window <= 0 {
		return Rate{}
	}
	burst = min(max(burst, 1), n)
	refills := time.Duration(n - burst + 1)
	margin := window / (4 * refills * refills)
	return Rate{Every: (window+refills-1)/refills + margin, Burst: burst}
}

func (r Rate) limited() bool { return r.Every > 0 }

// Limits are the budgets of one platform. A zero Rate leaves that scope
// unlimited; the platform's Retry-After applies regardless.
type Limits struct {
	// PostPerChannel limits new messages (and uploads) per channel.
	PostPerChannel Rate
	// EditPerMessage limits edits of one message; it is also the coalescing
	// window, so a streaming message is edited about once per Every.
	EditPerMessage Rate
	// EditPerChannel limits edits per channel (Discord).
	EditPerChannel Rate
	// EditPerWorkspace limits edits across the whole workspace (Slack).
	EditPerWorkspace Rate
	// StreamPerWorkspace limits, in place of EditPerWorkspace, the edits
	// of messages the adapter streams (chat.Streamer): Slack's appends have
	// a limit of their own.
	StreamPerWorkspace Rate
	// Requests limits every call (Discord's global limit).
	Requests Rate
	// Status limits status updates (chat.StatusSetter) across the
	// workspace. Status updates draw from this budget alone (and Requests,
	// leaving it the reserve of Low operations), so they never take a
	// token a post or an edit needs.
	Status Rate
}

// SlackLimits are the Slack budgets of docs/behaviour.md §5: chat.postMessage 1/s per channel
// with bursts of 5; chat.update at most 1/s per message and 50 per minute per
// workspace (a burst of 5, then paced so no 60 s window holds more than 50);
// status updates at most 20 per minute across the workspace.
func SlackLimits() Limits {
	return Limits{
		PostPerChannel:     Rate{Every: time.Second, Burst: 5},
		EditPerMessage:     Rate{Every: time.Second, Burst: 1},
		EditPerWorkspace:   PerWindow(50, time.Minute, 5),
		Status:             PerWindow(SlackStatusPerMinute, time.Minute, 5),
		StreamPerWorkspace: PerWindow(100, time.Minute, 5),
	}
}

// SlackStatusPerMinute is the default budget of Slack status updates: with
// the default 8 runs refreshing every 8 s a thread's status is refreshed
// about every 24 s, well within the 2 minutes an assistant status shows.
const SlackStatusPerMinute = 20

// DiscordLimits are the Discord budgets of docs/behaviour.md §5: at most 5 message edits in
// any 5 s per channel and 50 requests in any second overall, plus an edit of
// one message at most once per second (the streaming cadence). Posts get the
// same 5-per-5 s per channel that Discord's message route enforces, so a long
// answer split into many messages waits instead of collecting 429s.
func DiscordLimits() Limits {
	return Limits{
		PostPerChannel: PerWindow(5, 5*time.Second, 3),
		EditPerMessage: Rate{Every: time.Second, Burst: 1},
		EditPerChannel: PerWindow(5, 5*time.Second, 2),
		Requests:       PerWindow(50, time.Second, 10),
	}
}

// reserveShare is the part of a bucket's burst that Low operations leave to
// the others, so finals and notices go out at once even while streaming edits
// keep every bucket busy.
const reserveShare = 0.2

// bucket is a token bucket in GCRA form: tat is the time at which the bucket
// will be full again. Holding a time instead of a token count keeps it exact
// and lets readyAt say when a call may go without simulating refills.
type bucket struct {
	every   time.Duration
	burst   int
	reserve int       // tokens Low operations may not take
	tat     time.Time // theoretical arrival time; zero = full
	paused  time.Time // a platform's Retry-After: nothing goes before it
	refs    int       // threads using a shared channel bucket
}

func newBucket(r Rate) bucket {
	b := bucket{every: r.Every, burst: max(r.Burst, 1)}
	if b.burst > 1 {
		b.reserve = min(max(int(float64(b.burst)*reserveShare), 1), b.burst-1)
	}
	return b
}

// readyAt is the earliest time a call of priority p may take a token.
func (b *bucket) readyAt(p Priority) time.Time {
	need := 1
	if p == Low {
		need += b.reserve
	}
	at := b.tat.Add(-time.Duration(b.burst-need) * b.every)
	if b.paused.After(at) {
		return b.paused
	}
	return at
}

func (b *bucket) take(now time.Time) {
	if b.tat.Before(now) {
		b.tat = now
	}
	b.tat = b.tat.Add(b.every)
}

func (b *bucket) pause(until time.Time) {
	if until.After(b.paused) {
		b.paused = until
	}
}

// idle says the bucket is indistinguishable from a new one, so it can be
// forgotten.
func (b *bucket) idle(now time.Time) bool {
	return !b.tat.After(now) && !b.paused.After(now)
}
