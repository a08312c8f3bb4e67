package bridge

import (
	"strings"
	"sync"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/outbox"
)

// streamRenderEvery bounds how often streamed text re-renders a thread's status
// message; the outbox further coalesces edits to the platform's budget.
const streamRenderEvery = 250 * time.Millisecond

// view renders one thread's session events into chat operations.
//
// A run shows as a status message that is edited in place: "working…" with
// the repository and branch, one short line per tool call (⏳ then ✓/✗ with its
// duration), the model's narration between tool calls, and a live preview of
// the reply being streamed. The answer itself is posted as new message(s) when
// it is complete — posts are not held back by the platforms' tight edit budgets
// — split at the platform limit with code fences balanced, and the last message
// of the run ends with the footer. Notices (retry, compaction, errors) are
// separate messages; after one, or after queued input is delivered, the status
// continues in a new message below so the thread reads in order.
//
// Session events arrive on the session's event queue; run boundaries come from
// the thread's owner goroutine; a mutex orders the two.
type view struct {
	out     *outbox.Outbox
	ref     chat.ThreadRef
	limit   int
	measure func(string) int // nil: rune count
	now     func() time.Time
	after   func(time.Duration, func()) *time.Timer // time.AfterFunc; tests replace it
	// delivered is called (on the event queue) when queued input reaches the model.
	delivered func(inputID string)
	// onText is told the latest text of every status message (for the saver).
	onText func(m *outbox.Message, text string)
	// onRunStart is told (on the event queue) about a run the thread did not
	// start itself (input queued during a compaction, delivered afterwards).
	onRunStart func()
	price      func() Price
	// final posts a run's answers (the last one ends with the footer) when
	// set: the thread stores them first, so a crash cannot lose them
	// (thread_answer.go). runID is the run's storage id, 0 if not known yet.
	// notify is the person the first chunk mentions ("" for nobody).
	final func(runID int64, chunks []string, notify string)
	// redact replaces configured secrets in what the model wrote into a
	// tool call's arguments; nil leaves them.
	redact func(string) string

	mu      sync.Mutex
	run     *runState
	armed   *runState
	retry   *notice
	compact *notice
	// last is the status message of the latest run that ended; offered the
	// buttons it and the next ones get once they end (actions.go).
	last    *outbox.Message
	offered []chat.Action
}

type notice struct {
	msg  *outbox.Message
	text string
}

type runState struct {
	id         int64  // the run's storage id (setRunID), 0 until the thread knows it
	context    string // "`repo` · `branch`"
	seg        *segment
	stats      runStats
	streaming  *strings.Builder // the reply being streamed; nil between replies
	lastRender time.Time
	// trailing renders streamed text that arrived too soon after the last
	// render, once streamRenderEvery has passed: a model that pauses after
	// a burst (thinking, a slow provider) still shows all it has said.
	trailing *time.Timer
	started  bool // the run's first user message was seen
	// status is the run's first status message, which carries runActions
	// (Stop) until the run ends.
	status *outbox.Message
	answer []string // finished answer text not posted yet
	// lastError is the failure of the latest reply, shown when the run ends
	// unless a retry or compaction notice already told it (reported).
	lastError string
	reported  bool
	// first is the run's first segment; ended says the run is over. A first
	// segment sealed while the run goes on (below it a retry or compaction
	// notice) keeps its working line until the run ends, then gets its
	// final form: it must not say ✓ while a retry waits.
	first *segment
	ended bool
}

// segment is a status message (or several, when it outgrows one).
type segment struct {
	first  bool // the run's first status message: it shows the working line
	blocks []block
	msgs   []*outbox.Message
	texts  []string // the text last requested for each message
	sealed bool
}

type block struct {
	text   string
	toolID string // set for tool lines, so their line can be updated
}

func newView(out *outbox.Outbox, ref chat.ThreadRef, limit int, measure func(string) int, now func() time.Time) *view {
	if limit <= 0 {
		limit = 2000
	}
	return &view{out: out, ref: ref, limit: limit, measure: measure, now: now, after: time.AfterFunc, price: func() Price { return Price{} }}
}

// arm prepares the status of the run the thread is about to start: the run
// begins when the session says so (agent_start), which may happen before the
// thread hears back from Start. status is the message already posted for it.
func (v *view) arm(context string, status *outbox.Message, statusText string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	r := &runState{context: context, seg: &segment{first: true}, stats: runStats{started: v.now()}}
	r.first = r.seg
	if status != nil {
		r.seg.msgs = []*outbox.Message{status}
		r.seg.texts = []string{statusText}
	}
	v.armed = r
}

// disarm drops an armed run that did not start and returns its status message.
func (v *view) disarm() *outbox.Message {
	v.mu.Lock()
	defer v.mu.Unlock()
	r := v.armed
	v.armed = nil
	if r == nil || len(r.seg.msgs) == 0 {
		return nil
	}
	return r.seg.msgs[0]
}

// endRun closes the run: the status message loses its "working" line and
// the answer is posted; footer ends the last of them. notify, when set, is
// the person the answer mentions: it is then posted as a new message even
// when it is only the footer, since an edit tells nobody.
func (v *view) endRun(footerLine, notify string) runStats {
	v.mu.Lock()
	defer v.mu.Unlock()
	r := v.run
	if r == nil {
		return runStats{}
	}
	v.run = nil
	r.ended = true
	v.refinalizeFirstLocked(r)
	if r.lastError != "" && !r.reported {
		r.answer = append(r.answer, "❌ The model request failed: "+r.lastError)
	}
	answer := strings.Join(r.answer, "\n\n")
	r.answer = nil
	if answer == "" && notify == "" {
		// Nothing to post: the footer ends the status message.
		r.seg.blocks = append(r.seg.blocks, block{text: footerLine})
		v.finalizeLocked(r)
		v.endActionsLocked(r)
		return r.stats
	}
	v.finalizeLocked(r)
	v.endActionsLocked(r)
	if answer != "" {
		footerLine = answer + "\n\n" + footerLine
	}
	v.postFinalLocked(r.id, footerLine, notify)
	return r.stats
}

// endActionsLocked takes Stop off the ended run's status message (in the
// same edit as its final text) and gives it the buttons offered so far.
func (v *view) endActionsLocked(r *runState) {
	if r.status == nil {
		return
	}
	v.out.SetActions(r.status, v.offered, outbox.Normal)
	v.last = r.status
}

// offer sets the buttons of the latest finished run's status message, and
// of every later one when it ends (Diff and the pull request's, once the
// branch was pushed).
func (v *view) offer(actions []chat.Action) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.offered = actions
	if v.run == nil && v.last != nil {
		v.out.SetActions(v.last, actions, outbox.Normal)
	}
}

// stats returns the current run's stats so far.
func (v *view) stats() runStats {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.run == nil {
		return runStats{}
	}
	return v.run.stats
}

// note adds a line to the current status (or posts it when no run is active).
func (v *view) note(text string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.run == nil {
		v.postChunks(text)
		return
	}
	v.run.seg.blocks = append(v.run.seg.blocks, block{text: text})
	v.renderLocked(v.run, outbox.Normal)
}

// post sends a separate message, after which the status continues below it.
func (v *view) post(text string) *outbox.Message {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.postLocked(text)
}

func (v *view) postLocked(text string) *outbox.Message {
	if r := v.run; r != nil {
		v.flushAnswerLocked(r)
		v.sealLocked(r)
	}
	return v.postChunks(text)
}

func (v *view) postChunks(text string) *outbox.Message {
	var last *outbox.Message
	for _, chunk := range Split(text, v.limit, v.measure) {
		last = v.out.Post(v.ref, chunk, outbox.High, nil)
	}
	return last
}

// flushAnswerLocked posts the finished answer text held back so far.
func (v *view) flushAnswerLocked(r *runState) {
	if len(r.answer) == 0 {
		return
	}
	text := strings.Join(r.answer, "\n\n")
	r.answer = nil
	v.sealLocked(r)
	// An answer posted while the run goes on (input joined it, a notice
	// came) is stored first as the closing one is.
	v.postFinalLocked(r.id, text, "")
}

// sealLocked renders the current status segment for good (no "working" line, no
// preview) and starts a new one, posted when it first has something to show.
func (v *view) sealLocked(r *runState) {
	if len(r.seg.msgs) == 0 && len(r.seg.blocks) == 0 {
		return
	}
	v.finalizeLocked(r)
	r.seg = &segment{}
}

// finalizeLocked renders the segment's final form.
func (v *view) finalizeLocked(r *runState) {
	r.seg.sealed = true
	v.renderLocked(r, outbox.Normal)
}

// handle is the session listener.
func (v *view) handle(ev agent.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	r := v.run
	switch e := ev.(type) {
	case agent.AgentStart:
		if r != nil {
			return // a retry or a continuation of the same run
		}
		if v.armed != nil {
			v.run, v.armed = v.armed, nil
		} else {
			v.run = &runState{seg: &segment{first: true}, stats: runStats{started: v.now()}}
			if v.onRunStart != nil {
				v.onRunStart()
			}
		}
		v.renderLocked(v.run, outbox.Normal)
	case agent.MessageStart:
		if e.Message.Role == llm.RoleUser {
			if e.Message.InputID != "" && v.delivered != nil {
				v.delivered(e.Message.InputID)
			}
			if r != nil {
				if r.started {
					// Queued input joins the run: what came before is done,
					// and the status continues below the person's message.
					v.flushAnswerLocked(r)
					v.sealLocked(r)
				}
				r.started = true
			}
			return
		}
		if e.Message.Role == llm.RoleAssistant && r != nil {
			r.streaming = &strings.Builder{}
		}
	case agent.MessageUpdate:
		if r == nil || r.streaming == nil || e.Delta.Kind != llm.DeltaText {
			return
		}
		r.streaming.WriteString(e.Delta.Text)
		if since := v.now().Sub(r.lastRender); since >= streamRenderEvery {
			v.renderLocked(r, outbox.Low)
		} else if r.trailing == nil {
			r.trailing = v.after(streamRenderEvery-since, func() {
				v.mu.Lock()
				defer v.mu.Unlock()
				r.trailing = nil
				if v.run == r && r.streaming != nil {
					v.renderLocked(r, outbox.Low)
				}
			})
		}
	case agent.MessageEnd:
		if e.Message.Role != llm.RoleAssistant || r == nil {
			return
		}
		r.streaming = nil
		if r.trailing != nil {
			r.trailing.Stop()
			r.trailing = nil
		}
		v.account(r, e.Message)
		v.renderLocked(r, outbox.Normal)
	case agent.ToolExecutionStart:
		if r == nil {
			return
		}
		r.seg.blocks = append(r.seg.blocks, block{text: toolLine(e.ToolName, e.Args, false, false, 0, v.redact), toolID: e.ToolCallID})
		v.renderLocked(r, outbox.Normal)
	case agent.ToolExecutionEnd:
		if r == nil {
			return
		}
		line := toolLine(e.ToolName, e.Args, true, e.Result.IsError, e.Duration, v.redact)
		for i := len(r.seg.blocks) - 1; i >= 0; i-- {
			if r.seg.blocks[i].toolID == e.ToolCallID {
				r.seg.blocks[i].text = line
				line = ""
				break
			}
		}
		if line != "" { // its start line is in a sealed message: show the end here
			r.seg.blocks = append(r.seg.blocks, block{text: line, toolID: e.ToolCallID})
		}
		v.renderLocked(r, outbox.Normal)
	case agent.AutoRetryStart:
		text := retryNotice(e)
		if v.retry != nil { // a later attempt updates the same notice
			v.retry.text = text
			v.out.Edit(v.retry.msg, text, outbox.High)
			return
		}
		v.retry = &notice{msg: v.postLocked(text), text: text}
	case agent.AutoRetryEnd:
		if r != nil && !e.Success {
			r.reported = true
		}
		if v.retry == nil {
			return
		}
		v.out.EditFinal(v.retry.msg, retryEndNotice(v.retry.text, e), outbox.High)
		v.retry = nil
	case agent.AutoCompactionStart:
		text := compactionStartNotice(e.Reason, e.Tokens, e.ContextWindow)
		v.compact = &notice{msg: v.postLocked(text), text: text}
	case agent.AutoCompactionEnd:
		text := compactionEndNotice(e)
		if r != nil && e.ErrorMessage != "" {
			r.reported = true
		}
		if v.compact == nil {
			v.postLocked(text)
			return
		}
		v.out.EditFinal(v.compact.msg, text, outbox.High)
		v.compact = nil
	}
}

// account records a finished reply: usage for the footer, narration (replies
// that call tools) in the status, answers (replies that don't) for posting.
func (v *view) account(r *runState, m llm.Message) {
	if m.Usage != nil {
		r.stats.usage.Input += m.Usage.Input
		r.stats.usage.Output += m.Usage.Output
		r.stats.usage.CacheRead += m.Usage.CacheRead
		r.stats.usage.CacheWrite += m.Usage.CacheWrite
		// The router priced the reply with the model that wrote it; a reply
		// without a price (a bare client) is priced with the thread's model.
		if m.Usage.Cost != nil {
			r.stats.cost += m.Usage.Cost.Total
			r.stats.priced = true
		} else {
			r.stats.cost += v.price().cost(*m.Usage)
		}
	}
	r.stats.failed = m.StopReason == llm.StopReasonError
	text := strings.TrimSpace(m.TextContent())
	if m.StopReason == llm.StopReasonError {
		// Shown when the run ends, unless a retry or a compaction recovers it
		// or its notice tells it.
		r.lastError, r.reported = shortReason(m.ErrorMessage), false
		if llm.IsContextOverflow(0, "", m.ErrorMessage) {
			// Compaction had its chance before this is shown: say what the
			// person can do instead of only the provider's words.
			r.lastError = "this conversation no longer fits the model's context window, even after summarising what could be (" +
				r.lastError + "). `!reset` starts a fresh conversation on the same branch; `!model` can switch to a model with a larger window."
		}
		return
	}
	r.lastError = ""
	switch {
	case m.StopReason == llm.StopReasonAborted:
		if text != "" {
			r.answer = append(r.answer, text+"\n\n⏹ _stopped_")
		} else {
			r.seg.blocks = append(r.seg.blocks, block{text: "⏹ _stopped_"})
		}
	case len(m.ToolCalls()) > 0:
		if text != "" {
			r.seg.blocks = append(r.seg.blocks, block{text: text})
		}
	default:
		if text == "" {
			text = "_(the model returned an empty reply)_"
		}
		if m.StopReason == llm.StopReasonLength {
			text += "\n\n_(the reply hit the output token limit)_"
		}
		r.answer = append(r.answer, text)
	}
}

// renderLocked brings the status segment's messages up to date.
func (v *view) renderLocked(r *runState, p outbox.Priority) {
	r.lastRender = v.now()
	text := r.text()
	seg := r.seg
	if text == "" {
		return
	}
	chunks := Split(text, v.limit, v.measure)
	for i, c := range chunks {
		if i < len(seg.msgs) {
			if seg.texts[i] != c {
				seg.texts[i] = c
				if seg.sealed {
					// The status's last text: it must not stay "working…"
					// because the platform refused an edit.
					v.out.EditFinal(seg.msgs[i], c, p)
				} else {
					v.out.Edit(seg.msgs[i], c, p)
				}
				v.textChanged(seg.msgs[i], c)
			}
			continue
		}
		// A new message is never optional. The run's first status message
		// grows through edits: an adapter may stream it.
		key := chat.PostKey{Stream: seg.first && !seg.sealed && i == 0}
		m := v.out.PostKeyed(v.ref, c, max(p, outbox.Normal), key, nil)
		seg.msgs = append(seg.msgs, m)
		seg.texts = append(seg.texts, c)
		v.textChanged(m, c)
	}
	if r.status == nil && seg.first && !seg.sealed && len(seg.msgs) > 0 {
		// The run's first status message (posted by the thread or just
		// now): Stop shows there until the run ends.
		r.status = seg.msgs[0]
		v.out.SetActions(r.status, runActions, outbox.High)
	}
	// A preview that shrank leaves trailing messages: keep them, emptied.
	for i := len(chunks); i < len(seg.msgs); i++ {
		if seg.texts[i] != "…" {
			seg.texts[i] = "…"
			v.out.Edit(seg.msgs[i], "…", p)
		}
	}
}

func (v *view) textChanged(m *outbox.Message, text string) {
	if v.onText != nil {
		v.onText(m, text)
	}
}

// text is the status segment: the working line, tool lines and narration, and
// the preview of the reply being streamed. A sealed segment has only its blocks
// (or the repository line when it has none).
func (r *runState) text() string { return r.segText(r.seg) }

// segText renders one segment of the run.
func (r *runState) segText(seg *segment) string {
	var b strings.Builder
	if seg.first && (!seg.sealed || !r.ended) {
		b.WriteString(workingHeaderPrefix)
		if r.context != "" {
			b.WriteString(" · " + r.context)
		}
	}
	for i, bl := range seg.blocks {
		if b.Len() > 0 {
			if i > 0 && bl.toolID != "" && seg.blocks[i-1].toolID != "" {
				b.WriteString("\n") // consecutive tool lines stay together
			} else {
				b.WriteString("\n\n")
			}
		}
		b.WriteString(bl.text)
	}
	// The live preview shows only in the run's first status message: a
	// continued one (below a notice or a delivered follow-up) shows tool
	// lines, and the answer is posted when it is complete.
	if seg.first && !seg.sealed && r.streaming != nil && r.streaming.Len() > 0 {
		b.WriteString("\n\n")
		b.WriteString(r.streaming.String())
	}
	if b.Len() == 0 && seg.first && r.context != "" && len(seg.msgs) > 0 {
		b.WriteString("✓ " + r.context)
	}
	return b.String()
}

// refinalizeFirstLocked gives a first segment that was sealed while the run
// went on its final form, now that the run has ended.
func (v *view) refinalizeFirstLocked(r *runState) {
	seg := r.first
	if seg == nil || seg == r.seg || !seg.sealed || len(seg.msgs) == 0 {
		return
	}
	chunks := Split(r.segText(seg), v.limit, v.measure)
	for i, c := range chunks {
		if i >= len(seg.msgs) {
			break
		}
		if seg.texts[i] != c {
			seg.texts[i] = c
			v.out.EditFinal(seg.msgs[i], c, outbox.Normal)
			v.textChanged(seg.msgs[i], c)
		}
	}
}
