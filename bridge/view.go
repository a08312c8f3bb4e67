package bridge

import (
	"strings"
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
// The view is presentation only: every call returns a viewResult, the chat
// operations to carry out in order and what the thread must act on (a run it
// did not start, input delivered, a render to come back for). It calls
// nothing outside itself, and holds no lock: its caller makes one call at a
// time.
type view struct {
	limit   int
	measure func(string) int // nil: rune count
	now     func() time.Time
	// redact replaces configured secrets in what the model wrote into a
	// tool call's arguments; nil leaves them.
	redact func(string) string

	res    viewResult // what the call in progress returns
	trails uint64     // the number of the latest trailing render asked for

	run     *runState
	armed   *runState
	retry   *notice
	compact *notice
	// last is the status message of the latest run that ended; offered the
	// buttons it and the next ones get once they end (actions.go).
	last    *viewMsg
	offered []chat.Action
}

// viewMsg is a message the view shows: m is set when its post is carried
// out (applyOps), or when the thread posted it (arm).
type viewMsg struct{ m *outbox.Message }

// viewResult is what one call into the view asks of its caller.
type viewResult struct {
	// ops are the chat operations to carry out, in this order (applyOps).
	ops []viewOp
	// delivered are the ids of queued input that reached the model.
	delivered []string
	// rerender, when set, asks for tick(rerender) after rerenderIn:
	// streamed text waits there for the render the throttle held back.
	rerender   uint64
	rerenderIn time.Duration
}

type viewOpKind uint8

const (
	opPost       viewOpKind = iota // post msg with text
	opEdit                         // edit msg's text
	opEditFinal                    // edit msg's text for good (outbox.EditFinal)
	opSetActions                   // give msg its buttons
	opAnswer                       // post a run's answer (stored first by the thread)
)

// viewOp is one chat operation.
type viewOp struct {
	kind    viewOpKind
	msg     *viewMsg
	text    string
	prio    outbox.Priority
	stream  bool // opPost: the message grows through edits (chat.PostKey.Stream)
	save    bool // the text of a run's status message: the saver records it
	actions []chat.Action
	answer  viewAnswer // opAnswer
}

// viewAnswer is a run's answer, split at the platform's limit: runID is the
// run's storage id (0 if not known yet), notify the person the first chunk
// mentions ("" for nobody).
type viewAnswer struct {
	runID  int64
	chunks []string
	notify string
}

// applyOps carries out ops on out, in order: answer posts the answers, and
// saved (when not nil) is told the latest text of each status message.
func applyOps(out *outbox.Outbox, ref chat.ThreadRef, ops []viewOp, answer func(viewAnswer), saved func(*outbox.Message, string)) {
	for _, op := range ops {
		switch op.kind {
		case opPost:
			op.msg.m = out.PostKeyed(ref, op.text, op.prio, chat.PostKey{Stream: op.stream}, nil)
		case opEdit:
			out.Edit(op.msg.m, op.text, op.prio)
		case opEditFinal:
			out.EditFinal(op.msg.m, op.text, op.prio)
		case opSetActions:
			out.SetActions(op.msg.m, op.actions, op.prio)
		case opAnswer:
			answer(op.answer)
		}
		if op.save && saved != nil {
			saved(op.msg.m, op.text)
		}
	}
}

// postAnswerPlain posts an answer without storing it first.
func postAnswerPlain(out *outbox.Outbox, ref chat.ThreadRef, a viewAnswer) {
	for i, c := range a.chunks {
		key := chat.PostKey{}
		if i == 0 {
			key.Notify = a.notify
		}
		out.PostKeyed(ref, c, outbox.High, key, nil)
	}
}

func (v *view) emit(op viewOp) { v.res.ops = append(v.res.ops, op) }

// result hands over what the call in progress asks for.
func (v *view) result() viewResult {
	res := v.res
	v.res = viewResult{}
	return res
}

type notice struct {
	msg  *viewMsg
	text string
}

type runState struct {
	id         int64  // the run's storage id (setRunID), 0 until the thread knows it
	context    string // "`repo` · `branch`"
	seg        *segment
	stats      runStats
	streaming  *strings.Builder // the reply being streamed; nil between replies
	lastRender time.Time
	// trailing is the number of the render asked for (viewResult.rerender)
	// of streamed text that arrived too soon after the last render, 0 for
	// none: a model that pauses after a burst (thinking, a slow provider)
	// still shows all it has said.
	trailing uint64
	started  bool // the run's first user message was seen
	// status is the run's first status message, which carries runActions
	// (Stop) until the run ends.
	status *viewMsg
	answer []string // finished answer text not posted yet
	// lastError is the failure of the latest reply, shown when the run ends
	// unless a retry or compaction notice already told it (reported).
	lastError string
	reported  bool
	stopped   bool // a reply was aborted (!stop, the run timeout)
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
	msgs   []*viewMsg
	texts  []string // the text last requested for each message
	sealed bool
}

type block struct {
	text   string
	toolID string // set for tool lines, so their line can be updated
}

// newView returns the view of a thread on a platform whose messages hold
// limit (as measure counts; nil: runes), with the clock now and redact for
// tool call arguments (nil: none).
func newView(limit int, measure func(string) int, now func() time.Time, redact func(string) string) *view {
	if limit <= 0 {
		limit = 2000
	}
	return &view{limit: limit, measure: measure, now: now, redact: redact}
}

// arm prepares the status of the run the thread is about to start: the run
// begins when the session says so (agent_start), which may happen before the
// thread hears back from Start. status is the message already posted for it.
func (v *view) arm(context string, status *outbox.Message, statusText string) {
	r := &runState{context: context, seg: &segment{first: true}, stats: runStats{started: v.now()}}
	r.first = r.seg
	if status != nil {
		r.seg.msgs = []*viewMsg{{m: status}}
		r.seg.texts = []string{statusText}
	}
	v.armed = r
}

// disarm drops an armed run that did not start and returns its status message.
func (v *view) disarm() *outbox.Message {
	r := v.armed
	v.armed = nil
	if r == nil || len(r.seg.msgs) == 0 {
		return nil
	}
	return r.seg.msgs[0].m
}

// setRunID tells the view the storage id of the run it shows (or is about
// to show), for the answers it posts.
func (v *view) setRunID(id int64) {
	switch {
	case v.run != nil:
		v.run.id = id
	case v.armed != nil:
		v.armed.id = id
	}
}

// endRun closes the run: the status message loses its "working" line and
// the answer is posted; footer ends the last of them. notify, when set, is
// the person the answer mentions: it is then posted as a new message even
// when it is only the footer, since an edit tells nobody.
func (v *view) endRun(footerLine, notify string) viewResult {
	r := v.run
	if r == nil {
		return v.result()
	}
	v.run = nil
	r.ended = true
	v.refinalizeFirst(r)
	if r.lastError != "" && !r.reported {
		r.answer = append(r.answer, "❌ The model request failed: "+r.lastError)
	}
	answer := strings.Join(r.answer, "\n\n")
	r.answer = nil
	if answer == "" && notify == "" {
		// Nothing to post: the footer ends the status message.
		r.seg.blocks = append(r.seg.blocks, block{text: footerLine})
		v.finalize(r)
		v.endActions(r)
		return v.result()
	}
	v.finalize(r)
	v.endActions(r)
	if answer != "" {
		footerLine = answer + "\n\n" + footerLine
	}
	v.postFinal(r.id, footerLine, notify)
	return v.result()
}

// endActions takes Stop off the ended run's status message (in the same
// edit as its final text) and gives it the buttons offered so far.
func (v *view) endActions(r *runState) {
	if r.status == nil {
		return
	}
	v.emit(viewOp{kind: opSetActions, msg: r.status, actions: v.offered, prio: outbox.Normal})
	v.last = r.status
}

// offer sets the buttons of the latest finished run's status message, and
// of every later one when it ends (Diff and the pull request's, once the
// branch was pushed).
func (v *view) offer(actions []chat.Action) viewResult {
	v.offered = actions
	if v.run == nil && v.last != nil {
		v.emit(viewOp{kind: opSetActions, msg: v.last, actions: actions, prio: outbox.Normal})
	}
	return v.result()
}

// stats returns the current run's stats so far.
func (v *view) stats() runStats {
	if v.run == nil {
		return runStats{}
	}
	return v.run.stats
}

// note adds a line to the current status (or posts it when no run is active).
func (v *view) note(text string) viewResult {
	if v.run == nil {
		v.postChunks(text)
		return v.result()
	}
	v.run.seg.blocks = append(v.run.seg.blocks, block{text: text})
	v.render(v.run, outbox.Normal)
	return v.result()
}

// post sends a separate message, after which the status continues below it.
func (v *view) post(text string) viewResult {
	v.postNotice(text)
	return v.result()
}

func (v *view) postNotice(text string) *viewMsg {
	if r := v.run; r != nil {
		v.flushAnswer(r)
		v.seal(r)
	}
	return v.postChunks(text)
}

func (v *view) postChunks(text string) *viewMsg {
	var last *viewMsg
	for _, chunk := range Split(text, v.limit, v.measure) {
		last = &viewMsg{}
		v.emit(viewOp{kind: opPost, msg: last, text: chunk, prio: outbox.High})
	}
	return last
}

// flushAnswer posts the finished answer text held back so far.
func (v *view) flushAnswer(r *runState) {
	if len(r.answer) == 0 {
		return
	}
	text := strings.Join(r.answer, "\n\n")
	r.answer = nil
	v.seal(r)
	// An answer posted while the run goes on (input joined it, a notice
	// came) is stored first as the closing one is.
	v.postFinal(r.id, text, "")
}

// postFinal posts an answer of run runID, split at the platform's limit.
// notify, when set, is the person its first message mentions
// (chat.PostKey.Notify): room is left for the mention.
func (v *view) postFinal(runID int64, text, notify string) {
	limit := v.limit
	if notify != "" {
		limit -= mentionRoom
	}
	v.emit(viewOp{kind: opAnswer, answer: viewAnswer{runID: runID, chunks: Split(text, limit, v.measure), notify: notify}})
}

// seal renders the current status segment for good (no "working" line, no
// preview) and starts a new one, posted when it first has something to show.
func (v *view) seal(r *runState) {
	if len(r.seg.msgs) == 0 && len(r.seg.blocks) == 0 {
		return
	}
	v.finalize(r)
	r.seg = &segment{}
}

// finalize renders the segment's final form.
func (v *view) finalize(r *runState) {
	r.seg.sealed = true
	v.render(r, outbox.Normal)
}

// handle renders a session event. price is what the thread's model costs,
// for a reply that does not carry its cost.
func (v *view) handle(ev agent.Event, price Price) viewResult {
	r := v.run
	switch e := ev.(type) {
	case agent.AgentStart:
		if r != nil {
			break // a retry or a continuation of the same run
		}
		if v.armed != nil {
			v.run, v.armed = v.armed, nil
		} else {
			// A run the thread did not start (input queued during a
			// compaction, delivered afterwards): the owner adopts it from
			// the same event (sessionEvent).
			v.run = &runState{seg: &segment{first: true}, stats: runStats{started: v.now()}}
		}
		v.render(v.run, outbox.Normal)
	case agent.MessageStart:
		if e.Message.Role == llm.RoleUser {
			if e.Message.InputID != "" {
				v.res.delivered = append(v.res.delivered, e.Message.InputID)
			}
			if r != nil {
				if r.started {
					// Queued input joins the run: what came before is done,
					// and the status continues below the person's message.
					v.flushAnswer(r)
					v.seal(r)
				}
				r.started = true
			}
			break
		}
		if e.Message.Role == llm.RoleAssistant && r != nil {
			r.streaming = &strings.Builder{}
		}
	case agent.MessageUpdate:
		if r == nil || r.streaming == nil || e.Delta.Kind != llm.DeltaText {
			break
		}
		r.streaming.WriteString(e.Delta.Text)
		if since := v.now().Sub(r.lastRender); since >= streamRenderEvery {
			v.render(r, outbox.Low)
		} else if r.trailing == 0 {
			v.trails++
			r.trailing = v.trails
			v.res.rerender, v.res.rerenderIn = r.trailing, streamRenderEvery-since
		}
	case agent.MessageEnd:
		if e.Message.Role != llm.RoleAssistant || r == nil {
			break
		}
		r.streaming = nil
		r.trailing = 0
		v.account(r, e.Message, price)
		v.render(r, outbox.Normal)
	case agent.ToolExecutionStart:
		if r == nil {
			break
		}
		r.seg.blocks = append(r.seg.blocks, block{text: toolLine(e.ToolName, e.Args, false, false, 0, v.redact), toolID: e.ToolCallID})
		v.render(r, outbox.Normal)
	case agent.ToolExecutionEnd:
		if r == nil {
			break
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
		v.render(r, outbox.Normal)
	case agent.AutoRetryStart:
		text := retryNotice(e)
		if v.retry != nil { // a later attempt updates the same notice
			v.retry.text = text
			v.emit(viewOp{kind: opEdit, msg: v.retry.msg, text: text, prio: outbox.High})
			break
		}
		v.retry = &notice{msg: v.postNotice(text), text: text}
	case agent.AutoRetryEnd:
		if r != nil && !e.Success {
			r.reported = true
		}
		if v.retry == nil {
			break
		}
		v.emit(viewOp{kind: opEditFinal, msg: v.retry.msg, text: retryEndNotice(v.retry.text, e), prio: outbox.High})
		v.retry = nil
	case agent.AutoCompactionStart:
		text := compactionStartNotice(e.Reason, e.Tokens, e.ContextWindow)
		v.compact = &notice{msg: v.postNotice(text), text: text}
	case agent.AutoCompactionEnd:
		text := compactionEndNotice(e)
		if r != nil && e.ErrorMessage != "" {
			r.reported = true
		}
		if v.compact == nil {
			v.postNotice(text)
			break
		}
		v.emit(viewOp{kind: opEditFinal, msg: v.compact.msg, text: text, prio: outbox.High})
		v.compact = nil
	}
	return v.result()
}

// tick is the render asked for by viewResult.rerender: it shows the text
// streamed since the last render, unless the reply ended or a later render
// was asked for meanwhile.
func (v *view) tick(trailing uint64) viewResult {
	if r := v.run; r != nil && trailing != 0 && r.trailing == trailing {
		r.trailing = 0
		if r.streaming != nil {
			v.render(r, outbox.Low)
		}
	}
	return v.result()
}

// account records a finished reply: usage for the footer, narration (replies
// that call tools) in the status, answers (replies that don't) for posting.
func (v *view) account(r *runState, m llm.Message, price Price) {
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
			r.stats.cost += price.cost(*m.Usage)
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
		r.stopped = true
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

// render brings the status segment's messages up to date.
func (v *view) render(r *runState, p outbox.Priority) {
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
				// A sealed segment's edit is the status's last text: it
				// must not stay "working…" because the platform refused an
				// edit.
				kind := opEdit
				if seg.sealed {
					kind = opEditFinal
				}
				v.emit(viewOp{kind: kind, msg: seg.msgs[i], text: c, prio: p, save: true})
			}
			continue
		}
		// A new message is never optional. The run's first status message
		// grows through edits: an adapter may stream it.
		m := &viewMsg{}
		v.emit(viewOp{kind: opPost, msg: m, text: c, prio: max(p, outbox.Normal), stream: seg.first && !seg.sealed && i == 0, save: true})
		seg.msgs = append(seg.msgs, m)
		seg.texts = append(seg.texts, c)
	}
	if r.status == nil && seg.first && !seg.sealed && len(seg.msgs) > 0 {
		// The run's first status message (posted by the thread or just
		// now): Stop shows there until the run ends.
		r.status = seg.msgs[0]
		v.emit(viewOp{kind: opSetActions, msg: r.status, actions: runActions, prio: outbox.High})
	}
	// A preview that shrank leaves trailing messages: keep them, emptied.
	for i := len(chunks); i < len(seg.msgs); i++ {
		if seg.texts[i] != "…" {
			seg.texts[i] = "…"
			v.emit(viewOp{kind: opEdit, msg: seg.msgs[i], text: "…", prio: p})
		}
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
		b.WriteString(r.outcomeMark() + " " + r.context)
	}
	return b.String()
}

// outcomeMark is how the run's status message, left with only its
// repository line, says how the run ended: ✓ done, ❌ its last reply failed,
// ⏹ stopped.
func (r *runState) outcomeMark() string {
	switch {
	case r.stats.failed:
		return "❌"
	case r.stopped:
		return "⏹"
	}
	return "✓"
}

// refinalizeFirst gives a first segment that was sealed while the run went
// on its final form, now that the run has ended.
func (v *view) refinalizeFirst(r *runState) {
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
			v.emit(viewOp{kind: opEditFinal, msg: seg.msgs[i], text: c, prio: outbox.Normal, save: true})
		}
	}
}
