package compaction

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/openai"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// These tests run Summarize against the real OpenAI-compatible client and the fake
// chat-completions server on 127.0.0.1, and check what went over the wire.

const testModel = "summary-model"

func newModel(t *testing.T) (*llmfake.Server, *openai.Client) {
	t.Helper()
	srv := llmfake.New(t)
	c, err := openai.New(openai.Config{BaseURL: srv.URL(), APIKey: "sk-test-key"})
	if err != nil {
		t.Fatalf("openai.New: %v", err)
	}
	return srv, c
}

var sectionHeadings = []string{
	"## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress", "### Blocked",
	"## Key Decisions", "## Next Steps", "## Critical Context",
}

// prompt returns the single user message of a summarization request, after
// checking the request's shape: system prompt, one user message, no tools.
func prompt(t *testing.T, r llmfake.Request) string {
	t.Helper()
	if len(r.Messages) != 2 || r.Messages[0].Role != "system" || r.Messages[1].Role != "user" {
		t.Fatalf("request %d: got roles %v, want [system user]", r.Seq, roles(r))
	}
	if !strings.Contains(r.Messages[0].Content, "Never continue the conversation") {
		t.Errorf("request %d: the system prompt does not forbid continuing the conversation: %q", r.Seq, r.Messages[0].Content)
	}
	if len(r.Tools) != 0 || r.Model != testModel || !r.Stream {
		t.Errorf("request %d: got %d tools, model %q, stream %v; want no tools, %q, streaming", r.Seq, len(r.Tools), r.Model, r.Stream, testModel)
	}
	return r.Messages[1].Content
}

func roles(r llmfake.Request) []string {
	var out []string
	for _, m := range r.Messages {
		out = append(out, m.Role)
	}
	return out
}

func TestSummarizeFresh(t *testing.T) {
	srv, model := newModel(t)
	entries := session(
		userMsg("please fix the login bug"),
		toolCallMsg("read", `{"path":"auth/login.go"}`),
		toolResultMsg("package auth"),
		toolCallMsg("edit", `{"path":"auth/login.go","oldText":"a","newText":"b"}`),
		userMsg(big("now the docs", 100)), assistantMsg("done"),
	)
	p, err := Prepare(entries, keep(50))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	srv.Push(llmfake.TextReply("## Goal\n", "Fix the login bug."))

	res, err := Summarize(t.Context(), model, testModel, p, DefaultSettings(), "")
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("requests: got %d, want 1", len(reqs))
	}
	text := prompt(t, reqs[0])
	if reqs[0].MaxTokens != 13107 {
		t.Errorf("max_tokens: got %d, want 13107 (0.8 × 16384)", reqs[0].MaxTokens)
	}
	for _, want := range append([]string{
		"<conversation>\n[User]: please fix the login bug\n\n[Assistant tool calls]: read(path=\"auth/login.go\")",
		"[Tool result]: package auth", "</conversation>", "Write a checkpoint",
	}, sectionHeadings...) {
		if !strings.Contains(text, want) {
			t.Errorf("prompt lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "<previous-summary>") || strings.Contains(text, "Pay particular attention") {
		t.Errorf("fresh prompt has a previous summary or a focus:\n%s", text)
	}

	wantSummary := "## Goal\nFix the login bug.\n\n<modified-files>\nauth/login.go\n</modified-files>"
	if res.Summary != wantSummary {
		t.Errorf("Summary:\n got %q\nwant %q", res.Summary, wantSummary)
	}
	if res.FirstKeptIndex != 4 || res.FirstKeptSeq != 4 || res.TokensBefore != p.TokensBefore ||
		len(res.ReadFiles) != 0 || !slices.Equal(res.ModifiedFiles, []string{"auth/login.go"}) {
		t.Errorf("Result: got %+v", res)
	}
	c := res.Compaction("manual")
	if c.Summary != res.Summary || c.FirstKeptSeq != 4 || c.Reason != "manual" || !slices.Equal(c.ModifiedFiles, res.ModifiedFiles) {
		t.Errorf("Compaction: got %+v", c)
	}
}

func TestSummarizeUpdatesThePreviousSummaryWithFocus(t *testing.T) {
	srv, model := newModel(t)
	previous := "## Goal\nShip v2.\n\n<read-files>\nold.go\n</read-files>\n\n<modified-files>\nmain.go\n</modified-files>"
	entries := session(
		userMsg("u1"),
		compactionAt{summary: previous, firstKept: 2, read: []string{"old.go"}, mod: []string{"main.go"}},
		userMsg("migrate the database"), toolCallMsg("read", `{"path":"db.go"}`),
		userMsg(big("later", 100)), assistantMsg("ok"),
	)
	p, err := Prepare(entries, keep(50))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	srv.Push(llmfake.TextReply("## Goal\nShip v2 with the new schema."))

	res, err := Summarize(t.Context(), model, testModel, p, Settings{Enabled: true, ReserveTokens: 10000}, "  the database migration ")
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	text := prompt(t, srv.Requests()[0])
	for _, want := range append([]string{
		"<previous-summary>\n## Goal\nShip v2.\n</previous-summary>",
		"[User]: migrate the database",
		"Update that checkpoint with the new messages",
		"keep everything in it that still holds",
		"move items from In Progress to Done",
		"Pay particular attention to: the database migration",
	}, sectionHeadings...) {
		if !strings.Contains(text, want) {
			t.Errorf("update prompt lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "old.go") {
		t.Errorf("the previous summary's file lists were sent to the model:\n%s", text)
	}
	if got := srv.Requests()[0].MaxTokens; got != 8000 {
		t.Errorf("max_tokens: got %d, want 8000 (0.8 × 10000)", got)
	}
	want := "## Goal\nShip v2 with the new schema.\n\n<read-files>\ndb.go\nold.go\n</read-files>\n\n<modified-files>\nmain.go\n</modified-files>"
	if res.Summary != want {
		t.Errorf("Summary:\n got %q\nwant %q", res.Summary, want)
	}
}

// splitSession is a long turn cut in the middle, with earlier history before it.
func splitSession() []Entry {
	return session(
		userMsg("earlier request"), assistantMsg("earlier answer"),
		userMsg("refactor everything"), toolCallMsg("write", `{"path":"x.go","content":""}`), toolResultMsg("ok"),
		assistantMsg(big("step two", 100)), assistantMsg(big("step three", 100)),
	)
}

func TestSummarizeSplitTurnInParallel(t *testing.T) {
	srv, model := newModel(t)
	p, err := Prepare(splitSession(), keep(150))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if !p.IsSplitTurn || len(p.MessagesToSummarize) != 2 || len(p.TurnPrefixMessages) != 3 {
		t.Fatalf("Prepare: got split %v, %d + %d messages; want a split turn, 2 + 3", p.IsSplitTurn, len(p.MessagesToSummarize), len(p.TurnPrefixMessages))
	}

	// Each answer waits until both requests have arrived: sequential calls would
	// never get there.
	var (
		mu      sync.Mutex
		arrived int
		both    = make(chan struct{})
	)
	srv.Handle(func(r llmfake.Request) llmfake.Response {
		mu.Lock()
		if arrived++; arrived == 2 {
			close(both)
		}
		mu.Unlock()
		select {
		case <-both:
		case <-time.After(10 * time.Second):
			return llmfake.HTTPError(http.StatusTeapot, "not_parallel", "the two summaries were not requested in parallel")
		}
		if r.MaxTokens == 8192 {
			return llmfake.TextReply("## Original Request\nRefactor.")
		}
		return llmfake.TextReply("## Goal\nEarlier work.")
	})

	res, err := Summarize(t.Context(), model, testModel, p, DefaultSettings(), "naming")
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests: got %d, want 2", len(reqs))
	}
	var history, prefix string
	for _, r := range reqs {
		switch r.MaxTokens {
		case 13107:
			history = prompt(t, r)
		case 8192:
			prefix = prompt(t, r)
		default:
			t.Errorf("request with max_tokens %d, want 13107 (history) or 8192 (0.5 × 16384, prefix)", r.MaxTokens)
		}
	}
	if !strings.Contains(history, "[User]: earlier request") || strings.Contains(history, "refactor everything") {
		t.Errorf("history prompt should hold the earlier turn only:\n%s", history)
	}
	if !strings.Contains(prefix, "[User]: refactor everything") || !strings.Contains(prefix, "beginning of one turn") ||
		strings.Contains(prefix, "earlier request") || !strings.Contains(prefix, "Pay particular attention to: naming") {
		t.Errorf("prefix prompt should hold the turn's beginning, the prefix instructions and the focus:\n%s", prefix)
	}
	want := "## Goal\nEarlier work." + splitTurnSeparator + "## Original Request\nRefactor.\n\n<modified-files>\nx.go\n</modified-files>"
	if res.Summary != want {
		t.Errorf("Summary:\n got %q\nwant %q", res.Summary, want)
	}
}

// Beat pi, defect 2: a split turn with no earlier history keeps the previous
// summary (pi replaces it with "No prior history.").
func TestSummarizeKeepsPreviousSummaryWhenOnlyATurnPrefixIsNew(t *testing.T) {
	srv, model := newModel(t)
	previous := "## Goal\nShip v2.\n\n<read-files>\nold.go\n</read-files>"
	entries := session(
		userMsg("u1"), assistantMsg("a1"),
		compactionAt{summary: previous, firstKept: 2, read: []string{"old.go"}},
		userMsg("long turn"), assistantMsg(big("step 1", 100)), assistantMsg(big("step 2", 100)), assistantMsg(big("step 3", 100)),
	)
	p, err := Prepare(entries, keep(150))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	srv.Push(llmfake.TextReply("## Original Request\nA long turn."))

	res, err := Summarize(t.Context(), model, testModel, p, DefaultSettings(), "")
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].MaxTokens != 8192 {
		t.Fatalf("requests: got %d (max_tokens %v), want only the prefix summary (8192)", len(reqs), reqs[0].MaxTokens)
	}
	want := "## Goal\nShip v2." + splitTurnSeparator + "## Original Request\nA long turn.\n\n<read-files>\nold.go\n</read-files>"
	if res.Summary != want {
		t.Errorf("Summary:\n got %q\nwant %q", res.Summary, want)
	}
}

func TestSummarizeFailuresChangeNothing(t *testing.T) {
	tests := []struct {
		name    string
		answers []llmfake.Response
		split   bool
	}{
		{"server error", []llmfake.Response{llmfake.HTTPError(http.StatusInternalServerError, "", "upstream broke")}, false},
		{"stream cut", []llmfake.Response{llmfake.Stream(llmfake.Content("## Goal\npartial"), llmfake.Cut())}, false},
		{"stream ends without finishing", []llmfake.Response{llmfake.Stream(llmfake.Content("## Goal\npartial"))}, false},
		{"error inside the stream", []llmfake.Response{llmfake.Stream(llmfake.Content("## Go"), llmfake.StreamError("overloaded", "server_error", "busy"))}, false},
		{"empty reply", []llmfake.Response{llmfake.TextReply("  ")}, false},
		{"one of two fails", []llmfake.Response{llmfake.TextReply("ok"), llmfake.HTTPError(http.StatusBadGateway, "", "bad gateway")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, model := newModel(t)
			entries := session(userMsg("u1"), assistantMsg("a1"), userMsg(big("u2", 100)), assistantMsg("a2"))
			if tt.split {
				entries = splitSession()
			}
			p, err := Prepare(entries, keep(100))
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			srv.Push(tt.answers...)
			res, err := Summarize(t.Context(), model, testModel, p, DefaultSettings(), "")
			if err == nil {
				t.Fatalf("Summarize: got %+v and no error, want an error", res)
			}
			if res.Summary != "" || res.FirstKeptSeq != 0 {
				t.Errorf("Summarize returned a result with its error: %+v", res)
			}
			if strings.Contains(err.Error(), "sk-test-key") {
				t.Errorf("the error leaks the API key: %v", err)
			}
		})
	}
}

func TestSummarizeStopsWithItsContext(t *testing.T) {
	srv, model := newModel(t)
	p, err := Prepare(splitSession(), keep(150))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	srv.Handle(func(llmfake.Request) llmfake.Response { return llmfake.Stream(llmfake.Hang()) })
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := Summarize(ctx, model, testModel, p, DefaultSettings(), "")
		done <- err
	}()
	if _, err := srv.WaitRequests(t.Context(), 2); err != nil {
		t.Fatalf("waiting for the two requests: %v", err)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("Summarize after cancel: got no error")
	}
	if err := srv.WaitDisconnects(t.Context(), 2); err != nil {
		t.Fatalf("both requests should be abandoned: %v", err)
	}
}

func TestSummarizeRejectsMissingInputs(t *testing.T) {
	_, model := newModel(t)
	if _, err := Summarize(t.Context(), model, testModel, nil, DefaultSettings(), ""); err == nil {
		t.Error("nil preparation: got no error")
	}
	if _, err := Summarize(t.Context(), nil, testModel, &Preparation{}, DefaultSettings(), ""); err == nil {
		t.Error("nil model: got no error")
	}
}

func TestStripFileLists(t *testing.T) {
	tests := map[string]string{
		"plain":                               "plain",
		"s\n\n<read-files>\na\n</read-files>": "s",
		"s\n\n<modified-files>\nb\n</modified-files>\n":                                 "s",
		"s\n\n<read-files>\na\n</read-files>\n\n<modified-files>\nb\n</modified-files>": "s",
		"mentions </read-files> in the middle\nthen text":                               "mentions </read-files> in the middle\nthen text",
	}
	for in, want := range tests {
		if got := stripFileLists(in); got != want {
			t.Errorf("stripFileLists(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSummarizeFixture compacts the pi fixture end to end: the history request
// updates the summary of entry 627 with the messages from entry 550 on (the ones
// pi would lose), the prefix request covers the split turn opened at entry 939.
func TestSummarizeFixture(t *testing.T) {
	srv, model := newModel(t)
	p, err := Prepare(loadFixture(t), DefaultSettings())
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	srv.Handle(func(r llmfake.Request) llmfake.Response {
		if r.MaxTokens == TurnPrefixMaxTokens(DefaultSettings()) {
			return llmfake.TextReply("## Original Request\nQueue bash messages.")
		}
		return llmfake.TextReply("## Goal\nRefactor the coding agent.")
	})
	res, err := Summarize(t.Context(), model, testModel, p, DefaultSettings(), "")
	if err != nil {
		t.Fatalf("Summarize: %v", err)
	}
	reqs := srv.Requests()
	if len(reqs) != 2 {
		t.Fatalf("requests: got %d, want 2", len(reqs))
	}
	var history, prefix string
	for _, r := range reqs {
		if r.MaxTokens == 8192 {
			prefix = prompt(t, r)
		} else {
			history = prompt(t, r)
		}
	}
	previous := stripFileLists(loadFixture(t)[627].Compaction.Summary)
	for _, want := range []string{
		"<conversation>\n[User]: can leave it\n\n[Assistant thinking]: The user wants me to proceed with the moves", // entry 550
		"<previous-summary>\n" + previous + "\n</previous-summary>",
	} {
		if !strings.Contains(history, want) {
			t.Errorf("history prompt lacks %.80q", want)
		}
	}
	if strings.Contains(history, "wait, wtf this doesn't look right") || !strings.HasPrefix(prefix, "<conversation>\n[User]: wait, wtf this doesn't look right") {
		t.Error("the turn opened at entry 939 must go to the prefix request only")
	}
	if n := strings.Count(history, "more characters cut]"); n == 0 {
		t.Error("long tool results were not cut in the history prompt")
	}
	if !strings.HasPrefix(res.Summary, "## Goal\nRefactor the coding agent."+splitTurnSeparator+"## Original Request") ||
		strings.Count(res.Summary, "<read-files>") != 1 || len(res.ModifiedFiles) != 12 || res.TokensBefore != 180820 || res.FirstKeptSeq != 946 {
		t.Errorf("Result: got %d modified files, tokens before %d, first kept %d, summary starting %.200q",
			len(res.ModifiedFiles), res.TokensBefore, res.FirstKeptSeq, res.Summary)
	}
}
