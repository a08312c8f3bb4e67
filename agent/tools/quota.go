package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/threadsmith/threadsmith/agent/tools/truncate"
	"github.com/threadsmith/threadsmith/sandbox"
	"github.com/threadsmith/threadsmith/workspace/diskuse"
)

// DefaultQuotaEvery is how often a running bash command's workspace is
// measured, unless configured otherwise.
const DefaultQuotaEvery = time.Second

// Quota limits the disk one session's files take: the worktree, the
// scratch folder (bash's home and tmp, its output logs, shared files) and
// the cache folder together. Bytes are counted as allocated on disk (st_blocks), so a sparse
// file's holes are free; no single file may grow past what is left of
// Bytes either (RLIMIT_FSIZE, which counts a file's apparent size), so a
// sparse file cannot pass the quota in size. Files counts inodes.
type Quota struct {
	// Bytes caps the bytes; 0 is no limit.
	Bytes int64
	// Files caps the number of files and folders; 0 is no limit.
	Files int64
	// Floor is the machine-wide reserve shared by every session: while the
	// free space on its filesystem is below it, nothing the agent runs or
	// writes may grow, and running commands that grew are stopped. Nil: none.
	Floor *diskuse.Floor
	// Every is the interval at which a running command's workspace is
	// measured; it widens to eight times the last walk's duration on trees
	// slow to walk (the walk then takes at most an eighth of a core).
	// Default DefaultQuotaEvery.
	Every time.Duration
	// After waits d (time.After, without its leak); tests step it by hand.
	After func(ctx context.Context, d time.Duration) <-chan time.Time
	// Notify is told when a limit is first passed and then again only once
	// usage is back under every limit (the thread's notice). Nil: no one.
	Notify func(QuotaNotice)
}

// QuotaNotice says which limit stopped the agent's writes.
type QuotaNotice struct {
	// Limit is "bytes", "files", "reserve" (the machine-wide floor) or
	// "unmeasurable" (the workspace could not be walked).
	Limit string
	// Usage is what the session's files took when it was seen.
	Usage diskuse.Usage
	// Quota is the configured quota.
	Quota Quota
	// Free is the free space on the floor's filesystem ("reserve" only).
	Free int64
}

// Message is the thread's notice: what happened and what frees space.
func (n QuotaNotice) Message() string {
	if n.Limit == "unmeasurable" {
		return fmt.Sprintf("⚠️ This thread's files could not be measured for its disk quota (a folder tree deeper than %d levels?): files cannot grow until the agent deletes it.", diskuse.MaxDepth)
	}
	if n.Limit == "reserve" {
		return fmt.Sprintf("⚠️ The bot's disk is nearly full (%s free, %s kept for its database): commands that write are stopped and refused until space returns; they resume by themselves then.",
			truncate.FormatSize(n.Free), truncate.FormatSize(n.Quota.Floor.Reserve))
	}
	return fmt.Sprintf("⚠️ This thread reached its disk quota (%s): writes past it fail and commands that pass it are stopped, until the agent deletes files.", n.describe())
}

func (n QuotaNotice) describe() string {
	switch n.Limit {
	case "unmeasurable":
		return "its files could not be measured"
	case "reserve":
		return fmt.Sprintf("the bot's disk has %s free, %s kept for its database", truncate.FormatSize(n.Free), truncate.FormatSize(n.Quota.Floor.Reserve))
	case "files":
		return fmt.Sprintf("%d files and folders of %d allowed", n.Usage.Files, n.Quota.Files)
	}
	return fmt.Sprintf("%s used of %s allowed", truncate.FormatSize(n.Usage.Bytes), truncate.FormatSize(n.Quota.Bytes))
}

// quota is a workspace's quota and what it last measured.
type quota struct {
	cfg   Quota
	roots []string

	mu       sync.Mutex
	used     diskuse.Usage
	measured bool
	// overQuota and belowFloor say a notice was sent and usage has not been
	// back under the quota (the free space back above the reserve) since.
	overQuota, belowFloor bool
	walk                  time.Duration // how long the last walk took
	// later is closed when the measurement running in the background ends
	// (nil: none runs); every use of the recorded usage waits for it.
	later chan struct{}
}

// slowWalk is the walk a command's end does not wait for: the workspace is
// measured in the background then, and the next command or write waits.
var slowWalk = 100 * time.Millisecond

func newQuota(cfg Quota, roots ...string) *quota {
	if cfg.Every <= 0 {
		cfg.Every = DefaultQuotaEvery
	}
	if cfg.After == nil {
		cfg.After = afterCtx
	}
	return &quota{cfg: cfg, roots: roots}
}

func afterCtx(ctx context.Context, d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	t := time.NewTimer(d)
	go func() {
		defer t.Stop()
		select {
		case now := <-t.C:
			ch <- now
		case <-ctx.Done():
		}
	}()
	return ch
}

// enabled reports whether anything is enforced.
func (q *quota) enabled() bool {
	return q != nil && (q.cfg.Bytes > 0 || q.cfg.Files > 0 || q.cfg.Floor != nil)
}

// measure walks the workspace and records what it takes.
func (q *quota) measure(ctx context.Context) (diskuse.Usage, error) {
	began := time.Now()
	u, err := diskuse.Measure(ctx, q.roots...)
	q.mu.Lock()
	defer q.mu.Unlock()
	if err != nil {
		q.measured = false // the next use measures again
		return u, err
	}
	q.used, q.measured, q.walk = u, true, time.Since(began)
	return u, nil
}

// measureLater measures the workspace in the background when its last walk
// was slow and reports whether it does; the next use of the usage waits.
func (q *quota) measureLater() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.walk < slowWalk || q.later != nil {
		return false
	}
	done := make(chan struct{})
	q.later = done
	go func() {
		defer close(done)
		_, _ = q.measure(context.Background())
		q.mu.Lock()
		q.later = nil
		q.mu.Unlock()
	}()
	return true
}

// settle waits for a measurement running in the background.
func (q *quota) settle(ctx context.Context) {
	if q == nil {
		return
	}
	q.mu.Lock()
	later := q.later
	q.mu.Unlock()
	if later != nil {
		select {
		case <-later:
		case <-ctx.Done():
		}
	}
}

// current is the usage as last measured plus the file tools' writes since,
// measured now if it never was.
func (q *quota) current(ctx context.Context) (diskuse.Usage, error) {
	q.settle(ctx)
	q.mu.Lock()
	u, ok := q.used, q.measured
	q.mu.Unlock()
	if ok {
		return u, nil
	}
	return q.measure(ctx)
}

// adjust adds a file tool's change to the recorded usage.
func (q *quota) adjust(d diskuse.Usage) {
	if q == nil {
		return
	}
	q.mu.Lock()
	q.used = q.used.Add(d)
	q.mu.Unlock()
}

// exceeded names the limit u passes ("bytes" or "files"), or "".
func (q *quota) exceeded(u diskuse.Usage, limit diskuse.Usage) string {
	switch {
	case limit.Bytes > 0 && u.Bytes > limit.Bytes:
		return "bytes"
	case limit.Files > 0 && u.Files > limit.Files:
		return "files"
	}
	return ""
}

// limits are the configured limits as a Usage (0: none).
func (q *quota) limits() diskuse.Usage { return diskuse.Usage{Bytes: q.cfg.Bytes, Files: q.cfg.Files} }

// atLimit names the limit u has reached (no room for one more byte or
// file), or "".
func (q *quota) atLimit(u diskuse.Usage) string {
	switch {
	case q.cfg.Bytes > 0 && u.Bytes >= q.cfg.Bytes:
		return "bytes"
	case q.cfg.Files > 0 && u.Files >= q.cfg.Files:
		return "files"
	}
	return ""
}

// notify tells the thread of n once per episode: the quota's ends with a
// measurement back under it (underAgain), the floor's when the free space
// is seen above the reserve again.
func (q *quota) notify(n QuotaNotice) {
	q.mu.Lock()
	flag := &q.overQuota
	if n.Limit == "reserve" {
		flag = &q.belowFloor
	}
	first := !*flag
	*flag = true
	q.mu.Unlock()
	if first && q.cfg.Notify != nil {
		q.cfg.Notify(n)
	}
}

func (q *quota) underAgain() {
	q.mu.Lock()
	q.overQuota = false
	q.mu.Unlock()
}

// low checks the floor: whether the agents' writes must stop, with the free
// space seen and the room left above the floor's margin (-1: no floor).
func (q *quota) low() (free int64, low bool, room int64) {
	st, err := q.cfg.Floor.Check()
	if err != nil || q.cfg.Floor == nil || q.cfg.Floor.Reserve <= 0 {
		return st.Free, false, -1
	}
	if !st.Low {
		q.mu.Lock()
		q.belowFloor = false
		q.mu.Unlock()
	}
	return st.Free, st.Low, st.Room
}

// bashPlan is how one bash call may use the disk.
type bashPlan struct {
	start    diskuse.Usage
	limit    diskuse.Usage // what the watcher stops it past: the quota, or start when it began over it
	fileSize int64         // sandbox.Spec.FileSize
	byDisk   bool          // fileSize is the disk's room above the floor, less than the quota's
	// unmeasurable: the workspace could not be measured; nothing may grow,
	// and the watcher lets the command delete what is in the way.
	unmeasurable bool
	logCap       int64        // the most its full-output log may take
	note         string       // told to the model with the result when not "" (it began over a limit)
	notice       *QuotaNotice // told to the thread when it began over a limit
}

// planBash says how a bash call may grow the workspace: up to the quota (no
// file past what is left of it), or, when the workspace is over its quota,
// the disk below its floor or the workspace cannot be measured, not at all
// (it may still delete).
func (q *quota) planBash(ctx context.Context) bashPlan {
	p := bashPlan{logCap: maxBashLog}
	if !q.enabled() {
		return p
	}
	// The workspace as measured at the end of the last command, plus the
	// file tools' writes since: a command starts without walking the tree
	// (only the first, which has nothing measured yet, waits for a walk).
	u, err := q.current(ctx)
	if err != nil {
		n := QuotaNotice{Limit: "unmeasurable", Quota: q.cfg}
		p.fileSize, p.logCap, p.unmeasurable = sandbox.NoFileGrowth, 0, true
		p.note, p.notice = unmeasurableNote(err), &n
		return p
	}
	p.start, p.limit = u, q.limits()
	if q.cfg.Bytes > 0 {
		left := q.cfg.Bytes - u.Bytes
		p.fileSize, p.logCap = max(left, 0), min(p.logCap, max(left, 0))
		if left <= 0 {
			p.fileSize = sandbox.NoFileGrowth
		}
	}
	if lim := q.atLimit(u); lim != "" {
		p.limit = diskuse.Usage{Bytes: max(u.Bytes, q.cfg.Bytes), Files: max(u.Files, q.cfg.Files)}
		n := QuotaNotice{Limit: lim, Usage: u, Quota: q.cfg}
		p.note, p.notice = overNote(n), &n
	} else {
		q.underAgain()
	}
	free, low, room := q.low()
	switch {
	case low || room == 0:
		p.fileSize, p.logCap = sandbox.NoFileGrowth, 0
		p.limit = u // nothing may grow
		n := QuotaNotice{Limit: "reserve", Usage: u, Quota: q.cfg, Free: free}
		p.note, p.notice = floorNote(n), &n
	case room > 0 && (p.fileSize == 0 || (p.fileSize > 0 && room < p.fileSize)):
		// No single file may fill the disk either.
		p.fileSize, p.byDisk = room, true
	}
	return p
}

// watch measures the workspace while a bash call runs and calls stop (once)
// with the notice of the limit it passed: the call's limit, or, with the
// disk below its floor, any growth. It returns when ctx ends, which also
// ends the walk under way.
func (q *quota) watch(ctx context.Context, p bashPlan, stop func(QuotaNotice)) {
	every := q.cfg.Every
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.cfg.After(ctx, every):
		}
		began := time.Now()
		u, err := q.measure(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if p.unmeasurable {
				continue // it began so and cannot grow files: let it delete
			}
			// A tree that cannot be measured (deeper than diskuse allows)
			// is not let grow unseen.
			stop(QuotaNotice{Limit: "unmeasurable", Usage: p.start, Quota: q.cfg})
			return
		}
		every = max(q.cfg.Every, 8*time.Since(began))
		if lim := q.exceeded(u, p.limit); lim != "" {
			stop(QuotaNotice{Limit: lim, Usage: u, Quota: q.cfg})
			return
		}
		if free, low, _ := q.low(); low && (u.Bytes > p.start.Bytes || u.Files > p.start.Files) {
			stop(QuotaNotice{Limit: "reserve", Usage: u, Quota: q.cfg, Free: free})
			return
		}
	}
}

// overNote tells the model its workspace is over a limit and how to free
// space.
func overNote(n QuotaNotice) string {
	return fmt.Sprintf("[Disk quota: this thread's files (the repository, the scratch folder and, when $GOCACHE is set, the build caches in its parent folder, shared with the repository's other threads) take %s. Files cannot grow until you free space: delete what you do not need (rm works; `du -sh * .[!.]* | sort -h` shows the largest, `find . -xdev | wc -l` counts files), then run the command again (a command that starts at the quota cannot grow files, even after deleting some).]", n.describe())
}

func floorNote(n QuotaNotice) string {
	return fmt.Sprintf("[The bot's disk is nearly full (%s free, %s kept for its database): files cannot grow now; this resumes by itself when space returns. Deleting files you do not need helps.]",
		truncate.FormatSize(n.Free), truncate.FormatSize(n.Quota.Floor.Reserve))
}

// unmeasurableNote tells the model its files could not be measured.
func unmeasurableNote(err error) string {
	why := "the walk failed"
	if errors.Is(err, diskuse.ErrTooDeep) {
		why = err.Error()
	}
	return fmt.Sprintf("[Disk quota: this thread's files could not be measured (%s), so files cannot grow; delete what is in the way (a folder tree deeper than %d levels: rm -rf it), then run the command again.]", why, diskuse.MaxDepth)
}

// stoppedNote tells the model its command was stopped by the watcher.
func stoppedNote(n QuotaNotice) string {
	switch n.Limit {
	case "reserve":
		return "[Stopped: " + floorNote(n)[1:]
	case "unmeasurable":
		return "[Stopped: " + unmeasurableNote(diskuse.ErrTooDeep)[1:]
	}
	return "[Stopped: " + overNote(n)[1:]
}

// fileSizeNote tells the model why a file could not grow: the per-file
// limit, which is what was left of the quota when the command started.
func fileSizeNote(left int64) string {
	return fmt.Sprintf("[Disk quota: no file could grow past %s in this command (what was left of this thread's disk quota, or of the bot's disk above its reserve, when it started); a write past that failed with \"File too large\". Delete files you do not need to make room.]", truncate.FormatSize(left))
}

// checkWrite refuses a file tool's write of newSize bytes over a file of
// oldSize bytes (created: a new file) that would pass the quota, or grow
// anything while the disk is below its floor. It returns the change to
// record once the write is done.
func (q *quota) checkWrite(ctx context.Context, path string, oldSize, newSize int64, created bool) (diskuse.Usage, string) {
	if !q.enabled() {
		return diskuse.Usage{}, ""
	}
	d := diskuse.Usage{Bytes: blocks(newSize) - blocks(oldSize)}
	if created {
		d.Files = 1
	}
	if d.Bytes <= 0 && d.Files == 0 {
		return d, ""
	}
	u, err := q.current(ctx)
	if err != nil {
		return d, "Not written: " + unbracket(unmeasurableNote(err))
	}
	if free, low, _ := q.low(); low {
		n := QuotaNotice{Limit: "reserve", Usage: u, Quota: q.cfg, Free: free}
		q.notify(n)
		return d, "Not written: " + unbracket(floorNote(n))
	}
	if lim := q.exceeded(u.Add(d), q.limits()); lim != "" {
		n := QuotaNotice{Limit: lim, Usage: u, Quota: q.cfg}
		q.notify(n)
		return d, fmt.Sprintf("Not written: %s would take %s more, past this thread's disk quota (%s). Delete files you do not need (rm in bash works) and try again.",
			quoted(path), truncate.FormatSize(max(d.Bytes, 0)), n.describe())
	}
	return d, ""
}

// unbracket is a note to the model without its brackets, for a file tool's
// refusal.
func unbracket(note string) string { return strings.TrimSuffix(strings.TrimPrefix(note, "["), "]") }

// blocks is the space a file of n bytes takes on a filesystem of 4 KiB
// blocks.
func blocks(n int64) int64 { return (n + 4095) &^ 4095 }

// size is the target's size in bytes, 0 when it does not exist.
func (t target) size() int64 {
	fi, err := t.area.fs.Lstat(t.rel)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// exists reports whether something is at the target.
func (t target) exists() bool {
	_, err := t.area.fs.Lstat(t.rel)
	return err == nil
}
