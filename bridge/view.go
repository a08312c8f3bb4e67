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
// A run is shown as a transcript that grows in place: the status message posted
// when the run starts ("working…") is edited as text streams and tools run —
// one short line per tool call — and becomes the answer. When the transcript
// outgrows a message it continues in a new one (split at the platform limit,
// code fences balanced). Notices (retry, compaction) are separate messages;
// after one, or after a queued message is delivered, the transcript continues
// below it so the thread reads in order.
//
// Session events arrive on the session's event queue; run boundaries come from
// the thread's owner goroutine; a mutex orders the two.
type view struct {
	out   *outbox.Outbox
	ref   chat.ThreadRef
	limit int
	now   func() time.Time
	// delivered is called (on the event queue) when queued input reaches the model.
	delivered func(inputID string)
	// onText is told the latest text of every transcript message (for the
	// status saver).
	onText func(m *outbox.Message, text string)
	price  func() Price

	// onRunStart is told (on the event queue) about a run the thread did not
	// start itself (input queued during a compaction, delivered afterwards).
	onRunStart func()

	mu      sync.Mutex
	run     *runState
	armed   *runState
	retry   *notice
	compact *notice
}

type notice struct {
	msg  *outbox.Message
	text string
}

type runState struct {
	header     string
	seg        *segment
	stats      runStats
	streaming  *strings.Builder // text of the reply being streamed; nil between replies
	lastRender time.Time
	started    bool // the first user message of the run was seen
	replies    int
}

// segment is a part of a run's transcript shown in one or more messages.
type segment struct {
	blocks []block
	msgs   []*outbox.Message
	texts  []string // the text last requested for each message
}

type block struct {
	text   string
	toolID string // set for tool lines, so their line can be updated
	isText bool
}

func newView(out *outbox.Outbox, ref chat.ThreadRef, limit int, now func() time.Time) *view {
	if limit <= 0 {
		limit = 2000
	}
	return &view{out: out, ref: ref, limit: limit, now: now, price: func() Price { return Price{} }}
}

// arm prepares the transcript of the run the thread is about to start: the run
// begins when the session says so (agent_start), which may happen before the
// thread hears back from Start. status is the message already posted for it, or
// nil.
func (v *view) arm(header string, status *outbox.Message, statusText string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	r := &runState{header: header, seg: &segment{}, stats: runStats{started: v.now()}}
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

// active reports whether a run's transcript is open.
func (v *view) active() bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.run != nil
}

// endRun finishes the transcript. The footer, if not empty, ends the last
// message; it returns the run's stats.
func (v *view) endRun(footerLine string) runStats {
	v.mu.Lock()
	defer v.mu.Unlock()
	r := v.run
	if r == nil {
		return runStats{}
	}
	r.header = ""
	if r.streaming != nil {
		r.seg.blocks = append(r.seg.blocks, block{text: r.streaming.String(), isText: true})
		r.streaming = nil
	}
	if len(r.seg.blocks) == 0 && len(r.seg.msgs) > 0 && footerLine == "" {
		r.seg.blocks = append(r.seg.blocks, block{text: "_(no reply)_"})
	}
	if footerLine != "" {
		r.seg.blocks = append(r.seg.blocks, block{text: footerLine})
	}
	v.renderLocked(outbox.High)
	v.run = nil
	return r.stats
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

// note appends a line to the current transcript (or posts it when no run is active).
func (v *view) note(text string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.run == nil {
		v.out.Post(v.ref, text, outbox.High, nil)
		return
	}
	v.run.seg.blocks = append(v.run.seg.blocks, block{text: text})
	v.renderLocked(outbox.Normal)
}

// post sends a separate message, after which the transcript continues below it.
func (v *view) post(text string) *outbox.Message {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.postLocked(text)
}

func (v *view) postLocked(text string) *outbox.Message {
	v.sealLocked()
	var last *outbox.Message
	for _, chunk := range Split(text, v.limit) {
		last = v.out.Post(v.ref, chunk, outbox.High, nil)
	}
	return last
}

// sealLocked renders the current segment for good and starts a new one, so that
// what comes next is posted below whatever is posted now.
func (v *view) sealLocked() {
	r := v.run
	if r == nil || len(r.seg.msgs) == 0 && len(r.seg.blocks) == 0 {
		return
	}
	header := r.header
	r.header = ""
	v.renderLocked(outbox.High)
	r.header = header
	r.seg = &segment{}
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
			v.run = &runState{header: workingHeaderPrefix, seg: &segment{}, stats: runStats{started: v.now()}}
			if v.onRunStart != nil {
				v.onRunStart()
			}
		}
		v.renderLocked(outbox.Normal)
	case agent.MessageStart:
		if e.Message.Role == llm.RoleUser {
			if e.Message.InputID != "" && v.delivered != nil {
				v.delivered(e.Message.InputID)
			}
			if r != nil {
				if r.started {
					v.sealLocked() // the transcript continues below the person's message
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
		if v.now().Sub(r.lastRender) >= streamRenderEvery {
			v.renderLocked(outbox.Low)
		}
	case agent.MessageEnd:
		if e.Message.Role != llm.RoleAssistant || r == nil {
			return
		}
		r.streaming = nil
		r.replies++
		m := e.Message
		if m.Usage != nil {
			r.stats.usage.Input += m.Usage.Input
			r.stats.usage.Output += m.Usage.Output
			r.stats.usage.CacheRead += m.Usage.CacheRead
			r.stats.usage.CacheWrite += m.Usage.CacheWrite
			r.stats.cost += v.price().cost(*m.Usage)
		}
		if text := strings.TrimSpace(m.TextContent()); text != "" {
			r.seg.blocks = append(r.seg.blocks, block{text: text, isText: true})
		}
		r.stats.failed = m.StopReason == llm.StopReasonError
		switch m.StopReason {
		case llm.StopReasonError:
			if m.ErrorInfo == nil || !m.ErrorInfo.Retryable() {
				r.seg.blocks = append(r.seg.blocks, block{text: "❌ The model request failed: " + shortReason(m.ErrorMessage)})
			}
		case llm.StopReasonLength:
			r.seg.blocks = append(r.seg.blocks, block{text: "_(the reply hit the output token limit)_"})
		case llm.StopReasonAborted:
			r.seg.blocks = append(r.seg.blocks, block{text: "⏹ _stopped_"})
		}
		v.renderLocked(outbox.Normal)
	case agent.ToolExecutionStart:
		if r == nil {
			return
		}
		r.seg.blocks = append(r.seg.blocks, block{text: toolLine(e.ToolName, e.Args, false, false, 0), toolID: e.ToolCallID})
		v.renderLocked(outbox.Normal)
	case agent.ToolExecutionEnd:
		if r == nil {
			return
		}
		line := toolLine(e.ToolName, e.Args, true, e.Result.IsError, e.Duration)
		updated := false
		for i := len(r.seg.blocks) - 1; i >= 0; i-- {
			if r.seg.blocks[i].toolID == e.ToolCallID {
				r.seg.blocks[i].text = line
				updated = true
				break
			}
		}
		if !updated {
			r.seg.blocks = append(r.seg.blocks, block{text: line, toolID: e.ToolCallID})
		}
		v.renderLocked(outbox.Normal)
	case agent.AutoRetryStart:
		text := retryNotice(e)
		v.retry = &notice{msg: v.postLocked(text), text: text}
	case agent.AutoRetryEnd:
		if v.retry == nil {
			return
		}
		v.out.Edit(v.retry.msg, retryEndNotice(v.retry.text, e), outbox.High)
		v.retry = nil
	case agent.AutoCompactionStart:
		// The numbers come with the end event; the start says why.
		text := compactionStartNotice(e.Reason, 0, 0)
		v.compact = &notice{msg: v.postLocked(text), text: text}
	case agent.AutoCompactionEnd:
		text := compactionEndNotice(e)
		if v.compact == nil {
			v.postLocked(text)
			return
		}
		v.out.Edit(v.compact.msg, text, outbox.High)
		v.compact = nil
	}
}

// renderLocked brings the current segment's messages up to date.
func (v *view) renderLocked(p outbox.Priority) {
	r := v.run
	if r == nil {
		return
	}
	r.lastRender = v.now()
	text := r.text()
	if text == "" {
		return
	}
	seg := r.seg
	chunks := Split(text, v.limit)
	for i, c := range chunks {
		if i < len(seg.msgs) {
			if seg.texts[i] != c {
				seg.texts[i] = c
				v.out.Edit(seg.msgs[i], c, p)
				v.textChanged(seg.msgs[i], c)
			}
			continue
		}
		pp := p
		if pp == outbox.Low {
			pp = outbox.Normal // a new message is never optional
		}
		m := v.out.Post(v.ref, c, pp, nil)
		seg.msgs = append(seg.msgs, m)
		seg.texts = append(seg.texts, c)
		v.textChanged(m, c)
	}
	// Text that shrank (a preview replaced by a shorter final form) leaves
	// trailing messages: keep them visible but empty of stale text.
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

// text is the segment's transcript: header, blocks, and the streaming reply.
func (r *runState) text() string {
	var b strings.Builder
	if r.header != "" {
		b.WriteString(r.header)
	}
	for i, bl := range r.seg.blocks {
		if b.Len() > 0 {
			if i > 0 && bl.toolID != "" && r.seg.blocks[i-1].toolID != "" {
				b.WriteString("\n") // consecutive tool lines stay together
			} else {
				b.WriteString("\n\n")
			}
		}
		b.WriteString(bl.text)
	}
	if r.streaming != nil && r.streaming.Len() > 0 {
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(r.streaming.String())
	}
	return b.String()
}
