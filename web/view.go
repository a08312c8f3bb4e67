package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html/template"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
)

// maxShownOutput is how much of one tool output the page shows inline; the
// rest is on the output's own page (plain text), so that a command that
// printed megabytes does not make the session page unusable.
const maxShownOutput = 64 << 10

// page is one thread's page: its header and its timeline of items, each
// rendered on its own so that the live follow can send just what changed.
type page struct {
	ThreadID int64
	Title    string // the first request's first line, else Where
	Where    string // platform · channel · thread
	Repo     string
	Branch   string
	Origin   string // where a thread the bot opened itself came from ("schedule nightly"), or ""
	State    string // running, queued, idle or closed
	Cost     float64
	Tokens   int64
	Compare  string // the compare (or pull request) view of the branch, "" if unknown
	Items    []*item
	Version  string
}

// item is one block of the timeline. Key is its stable DOM id: an item
// whose content changes (a tool call gets its result, a run its usage) keeps
// its key and is replaced where it is.
type item struct {
	Key  string
	Kind string // session, run, prompt, assistant, thinking, tool, error, compaction, model, push, note
	At   time.Time

	Author string
	Text   string        // plain text (escaped by the template)
	HTML   template.HTML // rendered Markdown (already safe)

	// Tools.
	Tool      string
	Args      string
	Output    string
	Cut       int // bytes of output not shown
	OutputURL string
	// The whole output of a command the model saw the end of, kept in the
	// thread's scratch folder (FullOutput): its page, lines and bytes.
	FullURL              string
	FullLines, FullBytes int
	IsError              bool
	Pending              bool // no result yet

	// Runs.
	Run *runView

	// Compactions.
	Reason       string
	TokensBefore int
	Files        []string

	// Pushes.
	SHA, Result, Detail, Link string
	Diff                      []diffLine
	DiffURL                   string
}

type runView struct {
	N                          int
	Outcome                    string
	Started, Ended             time.Time
	Input, Output, Cache       int64
	CacheRead, CacheWrite      int64
	Cost                       float64
	Models                     []string // that replied, in order
	Replies, ToolCalls, Errors int
	// recorded: the usage above is the run's stored record (it ended), not
	// summed from its replies here.
	recorded bool
}

// ModelList names the models that replied in the run.
func (r *runView) ModelList() string { return strings.Join(r.Models, ", ") }

// addModel notes a model that replied, once.
func (r *runView) addModel(m string) {
	if m != "" && !slices.Contains(r.Models, m) {
		r.Models = append(r.Models, m)
	}
}

// Duration is how long the run took, "" while it runs.
func (r *runView) Duration() string {
	if r.Ended.IsZero() {
		return ""
	}
	return r.Ended.Sub(r.Started).Round(time.Second).String()
}

// build reads thread's record and lays it out.
func (s *Server) build(ctx context.Context, threadID int64, token string) (*page, error) {
	st := s.opts.Store
	version, err := st.ThreadVersion(ctx, threadID)
	if err != nil {
		return nil, err
	}
	th, err := st.ThreadByID(ctx, threadID)
	if err != nil {
		return nil, err
	}
	sessions, err := st.ThreadSessions(ctx, threadID)
	if err != nil {
		return nil, err
	}
	runs, err := st.ThreadRuns(ctx, threadID)
	if err != nil {
		return nil, err
	}
	runUsage, err := st.ThreadRunUsage(ctx, threadID)
	if err != nil {
		return nil, err
	}
	pushes, err := st.ThreadPushes(ctx, threadID)
	if err != nil {
		return nil, err
	}
	inbound, err := st.ThreadInbound(ctx, threadID)
	if err != nil {
		return nil, err
	}
	r := s.redactor
	p := &page{
		ThreadID: threadID, Version: version,
		Where:  r.Replace(threadTitle(th.Key)),
		Repo:   r.Replace(th.Repo),
		Branch: r.Replace(th.Branch),
		Origin: r.Replace(th.Origin),
		State:  "idle",
	}
	if th.State == storage.ThreadClosed {
		p.State = "closed"
	}
	for _, in := range inbound {
		if in.State == storage.InboundReceived || in.State == storage.InboundQueued {
			p.State = "queued"
		}
	}
	if s.opts.CompareURL != nil && th.Repo != "" && th.Branch != "" {
		// The URL is built from configuration and a branch name the agent
		// may influence: only a safe one becomes a link.
		if u, ok := safeURL(s.opts.CompareURL(th.Repo, th.Branch)); ok {
			p.Compare = u
		}
	}
	p.Title = p.Where
	for _, in := range inbound {
		if in.Mode == storage.ModePrompt {
			if t := headline(r.Replace(in.Text)); t != "" {
				p.Title = t
				break
			}
		}
	}
	authors := make(map[string]storage.Inbound, len(inbound))
	for _, in := range inbound {
		authors[strconv.FormatInt(in.ID, 10)] = in
	}
	runByInput := map[string]*storage.Run{}
	placed := map[int64]bool{}
	for i := range runs {
		if runs[i].InboundID != 0 {
			runByInput[strconv.FormatInt(runs[i].InboundID, 10)] = &runs[i]
		}
		if runs[i].EndedAt.IsZero() {
			p.State = "running"
		}
	}

	var cur *runView
	runN := 0
	addRun := func(run storage.Run) {
		runN++
		placed[run.ID] = true
		cur = &runView{N: runN, Outcome: string(run.Outcome), Started: run.StartedAt, Ended: run.EndedAt}
		if u, ok := runUsage[run.ID]; ok {
			cur.recorded = true
			cur.Input, cur.Output, cur.CacheRead, cur.CacheWrite = u.Input, u.Output, u.CacheRead, u.CacheWrite
			cur.Cache, cur.Cost = u.CacheRead+u.CacheWrite, u.Cost
			for _, m := range u.Models {
				cur.addModel(r.Replace(m))
			}
		}
		p.Items = append(p.Items, &item{Key: fmt.Sprintf("run-%d", run.ID), Kind: "run", At: run.StartedAt, Run: cur})
	}
	nextPush := 0
	// flushUntil places the runs not tied to a prompt and the pushes that
	// happened before t, by time: neither has a place in the transcript.
	flushUntil := func(t time.Time) {
		for {
			var runAt, pushAt time.Time
			ri := -1
			for i := range runs {
				if !placed[runs[i].ID] && runs[i].InboundID == 0 {
					ri, runAt = i, runs[i].StartedAt
					break
				}
			}
			if nextPush < len(pushes) {
				pushAt = pushes[nextPush].At
			}
			switch {
			case ri >= 0 && !runAt.After(t) && (nextPush >= len(pushes) || !runAt.After(pushAt)):
				addRun(runs[ri])
			case nextPush < len(pushes) && !pushAt.After(t):
				p.Items = append(p.Items, s.pushItem(ctx, th, pushes, nextPush, p.Compare, token))
				nextPush++
			default:
				return
			}
		}
	}

	all := make([][]transcript.Entry, len(sessions))
	delivered := map[string]bool{} // inbound ids that reached the model as a user message
	for si, sess := range sessions {
		if all[si], err = st.LoadEntries(ctx, sess.ID); err != nil {
			return nil, err
		}
		for _, e := range all[si] {
			if e.Message != nil && e.Message.Role == llm.RoleUser && e.Message.InputID != "" {
				delivered[e.Message.InputID] = true
			}
		}
	}
	for i := range runs {
		// A run whose input never became a user message (a command's, or
		// one cut off first) is placed by its time, like a run without input.
		if id := strconv.FormatInt(runs[i].InboundID, 10); runs[i].InboundID != 0 && !delivered[id] {
			runs[i].InboundID = 0
			delete(runByInput, id)
		}
	}
	for si, sess := range sessions {
		entries := all[si]
		if len(sessions) > 1 || si > 0 {
			text := "Session " + strconv.Itoa(si+1)
			if si > 0 {
				text += " (after !reset: a new conversation on the same branch)"
			}
			p.Items = append(p.Items, &item{Key: "session-" + strconv.Itoa(si), Kind: "session", At: sess.CreatedAt, Text: text + " · model " + r.Replace(sess.Model)})
		}
		calls := map[string]*item{} // tool call id → its item, for the result
		for _, e := range entries {
			at := time.UnixMilli(e.Timestamp)
			if e.Timestamp != 0 {
				flushUntil(at)
			}
			key := fmt.Sprintf("s%d-e%d", si, e.Seq)
			switch e.Type {
			case transcript.EntryMessage:
				m := e.Message
				if m.Role == llm.RoleUser {
					if run := runByInput[m.InputID]; run != nil && !placed[run.ID] {
						addRun(*run)
					}
				}
				s.messageItems(p, cur, calls, key, at, m, authors, token)
			case transcript.EntryCompaction:
				c := e.Compaction
				files := append(append([]string(nil), c.ReadFiles...), c.ModifiedFiles...)
				for i := range files {
					files[i] = r.Replace(files[i])
				}
				p.Items = append(p.Items, &item{Key: key, Kind: "compaction", At: at, HTML: markdown(r.Replace(c.Summary)),
					Reason: c.Reason, TokensBefore: c.TokensBefore, Files: files})
			case transcript.EntryModelChange:
				text := "Model: " + e.ModelChange.Model
				if e.ModelChange.Provider != "" {
					text += " (" + e.ModelChange.Provider + ")"
				}
				p.Items = append(p.Items, &item{Key: key, Kind: "model", At: at, Text: r.Replace(text)})
			case transcript.EntryThinkingLevel:
				p.Items = append(p.Items, &item{Key: key, Kind: "model", At: at, Text: "Thinking level: " + r.Replace(e.ThinkingLevel)})
			}
		}
	}
	flushUntil(time.Unix(1<<40, 0))
	// The reads above are not one snapshot: the version read again after
	// them says whether they saw exactly that version. If not, the page is
	// newer than its version, and the live follow must not take it as what
	// the viewer has (it would then never send what came in between).
	if after, err := st.ThreadVersion(ctx, threadID); err != nil || after != version {
		p.Version = ""
	}
	for _, it := range p.Items {
		if it.Run != nil {
			p.Cost += it.Run.Cost
			p.Tokens += it.Run.Input + it.Run.Output + it.Run.Cache
		}
	}
	return p, nil
}

// messageItems adds the items of one message.
func (s *Server) messageItems(p *page, run *runView, calls map[string]*item, key string, at time.Time, m *llm.Message, authors map[string]storage.Inbound, token string) {
	r := s.redactor
	switch m.Role {
	case llm.RoleUser:
		it := &item{Key: key, Kind: "prompt", At: at, HTML: markdown(r.Replace(m.TextContent()))}
		if in, ok := authors[m.InputID]; ok {
			it.Author = r.Replace(firstNonEmpty(in.AuthorName, in.AuthorID))
			it.At = in.ReceivedAt
		}
		for _, c := range m.Content {
			if c.Type == llm.ContentImage {
				it.Text += "[image " + r.Replace(c.MimeType) + "] "
			}
		}
		p.Items = append(p.Items, it)
	case llm.RoleCustom:
		if m.Display {
			p.Items = append(p.Items, &item{Key: key, Kind: "note", At: at, HTML: markdown(r.Replace(m.TextContent()))})
		}
	case llm.RoleAssistant:
		if run != nil {
			run.Replies++
			if u := m.Usage; u != nil && !run.recorded {
				run.Input += int64(u.Input)
				run.Output += int64(u.Output)
				run.CacheRead += int64(u.CacheRead)
				run.CacheWrite += int64(u.CacheWrite)
				run.Cache += int64(u.CacheRead + u.CacheWrite)
				if u.Cost != nil {
					run.Cost += u.Cost.Total
				}
				run.addModel(r.Replace(m.Model))
			}
		}
		for i, c := range m.Content {
			k := fmt.Sprintf("%s-%d", key, i)
			switch c.Type {
			case llm.ContentText:
				if strings.TrimSpace(c.Text) != "" {
					p.Items = append(p.Items, &item{Key: k, Kind: "assistant", At: at, Author: r.Replace(m.Model), HTML: markdown(r.Replace(c.Text))})
				}
			case llm.ContentThinking:
				if c.Thinking != "" {
					p.Items = append(p.Items, &item{Key: k, Kind: "thinking", At: at, Text: r.Replace(c.Thinking)})
				}
			case llm.ContentToolCall:
				if run != nil {
					run.ToolCalls++
				}
				it := &item{Key: k, Kind: "tool", At: at, Tool: r.Replace(c.Name), Args: r.Replace(prettyJSON(c.WireArguments())), Pending: true}
				calls[c.ID] = it
				p.Items = append(p.Items, it)
			}
		}
		if m.StopReason == llm.StopReasonError || m.StopReason == llm.StopReasonAborted {
			if run != nil && m.StopReason == llm.StopReasonError {
				run.Errors++
			}
			text := "The model's reply failed: " + firstNonEmpty(m.ErrorMessage, "no detail")
			if m.StopReason == llm.StopReasonAborted {
				text = "The reply was stopped."
			}
			p.Items = append(p.Items, &item{Key: key + "-err", Kind: "error", At: at, Text: r.Replace(text)})
		}
	case llm.RoleToolResult:
		it := calls[m.ToolCallID]
		if it == nil { // a result without its call (never written so): show it alone
			it = &item{Key: key, Kind: "tool", At: at, Tool: r.Replace(m.ToolName)}
			p.Items = append(p.Items, it)
		}
		out := r.Replace(m.TextContent())
		it.Pending, it.IsError = false, m.IsError
		if shown, cut := cutText(out, maxShownOutput); cut > 0 {
			out, it.Cut = shown, cut
			it.OutputURL = s.outputURL(p.ThreadID, key, token)
		}
		it.Output = out
		if full := fullOutputOf(m); full.Path != "" && s.opts.FullOutput != nil {
			it.FullURL = fullURL(p.ThreadID, key, token, 0)
			it.FullLines, it.FullBytes = full.Truncation.TotalLines, full.Truncation.TotalBytes
		}
	}
}

// fullOutput is what a tool result's details say of an output the model got
// only the end of (bash's BashDetails): where all of it was kept, and its size.
type fullOutput struct {
	Path       string `json:"fullOutputPath"`
	Truncation struct {
		TotalLines int `json:"totalLines"`
		TotalBytes int `json:"totalBytes"`
	} `json:"truncation"`
}

// fullOutputKey is in the details that may name a whole output. Most do not
// (an edit's hold its diff): decoding them all made every rebuild of a live
// page scan every diff of the session.
var fullOutputKey = []byte(`"fullOutputPath"`)

func fullOutputOf(m *llm.Message) fullOutput {
	var f fullOutput
	if !bytes.Contains(m.Details, fullOutputKey) || json.Unmarshal(m.Details, &f) != nil {
		return fullOutput{}
	}
	return f
}

func (s *Server) pushItem(ctx context.Context, th storage.Thread, pushes []storage.Push, i int, compare, token string) *item {
	r := s.redactor
	ps := pushes[i]
	it := &item{Key: fmt.Sprintf("push-%d", ps.ID), Kind: "push", At: ps.At, Text: r.Replace(ps.Branch),
		SHA: r.Replace(shortSHA(ps.SHA)), Result: string(ps.Result), Detail: r.Replace(ps.Detail)}
	if ps.Result != storage.PushOK {
		return it
	}
	it.Link = compare
	if patch, ok := s.pushPatch(ctx, th.Repo, pushes, i); ok {
		shown, cut := cutText(r.Replace(patch), maxShownOutput)
		it.Diff = diffLines(shown)
		if cut > 0 {
			it.Cut = cut
		}
		it.DiffURL = fmt.Sprintf("/s/%d/diff/%d", th.ID, ps.ID)
		if token != "" {
			it.DiffURL += "?t=" + token
		}
	}
	return it
}

// pushPatch is the patch of pushes[i]: from the previous successful push of
// the same branch, or from the fork point for the first.
func (s *Server) pushPatch(ctx context.Context, repo string, pushes []storage.Push, i int) (string, bool) {
	if s.opts.PushDiff == nil || repo == "" || pushes[i].SHA == "" {
		return "", false
	}
	from := ""
	for j := i - 1; j >= 0; j-- {
		if pushes[j].Result == storage.PushOK && pushes[j].Branch == pushes[i].Branch && pushes[j].SHA != "" {
			from = pushes[j].SHA
			break
		}
	}
	key := repo + " " + from + " " + pushes[i].SHA
	if patch, ok := s.diffs.get(key); ok {
		return patch, true
	}
	patch, truncated, err := s.opts.PushDiff(ctx, repo, from, pushes[i].SHA)
	if err != nil {
		// The commit may be gone (the mirror was rebuilt): no diff, not an error page.
		s.log.Debug("no diff for a push", "repo", repo, "sha", pushes[i].SHA, "err", err)
		return "", false
	}
	if truncated {
		patch += "\n… (the patch was cut at its size limit)\n"
	}
	s.diffs.put(key, patch)
	return patch, true
}

// cutText cuts s at max bytes, not inside a UTF-8 sequence, and says how
// many bytes were left out.
func cutText(s string, max int) (string, int) {
	if len(s) <= max {
		return s, 0
	}
	cut := max
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut], len(s) - cut
}

// diffLine is one line of a patch with its kind, for colour.
type diffLine struct {
	Class, Text string
}

func diffLines(patch string) []diffLine {
	lines := strings.Split(strings.TrimRight(patch, "\n"), "\n")
	out := make([]diffLine, len(lines))
	for i, l := range lines {
		class := ""
		switch {
		case strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "), strings.HasPrefix(l, "diff "):
			class = "file"
		case strings.HasPrefix(l, "@@"):
			class = "hunk"
		case strings.HasPrefix(l, "+"):
			class = "add"
		case strings.HasPrefix(l, "-"):
			class = "del"
		}
		out[i] = diffLine{Class: class, Text: l}
	}
	return out
}

// diffCache keeps the patches of pushes: commits do not change, and a live
// page is rebuilt on every change of its thread. Bounded: when full it is
// emptied and refilled on demand.
type diffCache struct {
	mu sync.Mutex
	m  map[string]string
}

const maxCachedDiffs = 256

func (c *diffCache) get(key string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.m[key]
	return p, ok
}

func (c *diffCache) put(key, patch string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedDiffs {
		c.m = map[string]string{}
	}
	c.m[key] = patch
}

// outputURL is the page of one tool result's whole output.
func (s *Server) outputURL(threadID int64, key, token string) string {
	u := fmt.Sprintf("/s/%d/output/%s", threadID, key)
	if token != "" {
		u += "?t=" + token
	}
	return u
}

// fullURL is the page of everything a command printed, from byte from.
func fullURL(threadID int64, key, token string, from int64) string {
	q := url.Values{"from": {strconv.FormatInt(from, 10)}}
	if token != "" {
		q.Set("t", token)
	}
	return fmt.Sprintf("/s/%d/full/%s?%s", threadID, key, q.Encode())
}

// threadTitle names a thread where its page and the list show it. A console
// thread's channel and thread are the same session id.
func threadTitle(k storage.ThreadKey) string {
	if k.Platform == "console" && k.Channel == k.Thread {
		return "console session " + k.Thread
	}
	return k.Platform + " · " + k.Channel + " · " + k.Thread
}

// maxHeadline is how many characters of a request its page's title shows.
const maxHeadline = 100

// headline is the first non-blank line of text, cut to maxHeadline
// characters.
func headline(text string) string {
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if r := []rune(line); len(r) > maxHeadline {
			line = string(r[:maxHeadline-1]) + "…"
		}
		return line
	}
	return ""
}

func shortSHA(sha string) string {
	if len(sha) > 10 {
		return sha[:10]
	}
	return sha
}

func prettyJSON(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", "  ") != nil {
		return s
	}
	return b.String()
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
