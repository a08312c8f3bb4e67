package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/anthropic"
	"github.com/threadsmith/threadsmith/agent/compaction"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/openai"
	anthropicfake "github.com/threadsmith/threadsmith/internal/fakes/anthropic"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/sqlite"
)

// TestEveryRequestExtendsThePreviousOne drives 30 turns with tool calls
// through the real OpenAI client and real SQLite, with a restart (storage
// closed and reopened) after turn 10 and an eviction (the session rebuilt from
// storage) after turn 20, and requires every request to repeat the previous
// one byte for byte before adding to it: the provider's prompt cache then
// covers the whole history. The model writes its arguments the way models do,
// with spaces and characters encoding/json would escape.
func TestEveryRequestExtendsThePreviousOne(t *testing.T) {
	fake := llmfake.New(t)
	turn := 0
	fake.Handle(func(req llmfake.Request) llmfake.Response {
		if req.LastMessage().Role == "tool" {
			return llmfake.Stream(llmfake.Content("done <ok> & fine"), llmfake.Usage(1000, 10, 0), llmfake.Finish("stop"))
		}
		turn++
		args := fmt.Sprintf(`{"x": "step %d && echo <out>",  "n": [1, 2]}`, turn)
		return llmfake.Stream(llmfake.ToolCalls(llmfake.Call{ID: fmt.Sprintf("call_%d", turn), Name: "probe", Args: args}),
			llmfake.Usage(1000, 10, 0), llmfake.Finish("tool_calls"))
	})
	client, err := openai.New(openai.Config{BaseURL: fake.URL(), APIKey: "sk-test"})
	if err != nil {
		t.Fatal(err)
	}
	bodies := func() (out [][]byte) {
		for _, r := range fake.Requests() {
			out = append(out, r.Body)
		}
		return out
	}
	share := driveTurns(t, client, bodies, splitBody, 30, map[int]string{10: "restart", 20: "evict"})
	t.Logf("cacheable-prefix share of the request bytes over 30 turns: %.4f", share)
	if share < 0.95 {
		t.Errorf("cacheable-prefix share of the request bytes = %.3f, want ≥ 0.95", share)
	}
}

// driveTurns runs n prompts, restarting or evicting after the turns named in
// at, checks the prefix invariant over all requests, and returns the share of
// request bytes (messages) that repeat the previous request.
func driveTurns(t *testing.T, client llm.Model, bodies func() [][]byte, split func(*testing.T, []byte) requestParts, n int, at map[int]string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dbPath := filepath.Join(t.TempDir(), "threadsmith.db")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	open := func() *sqlite.DB {
		db, err := sqlite.Open(ctx, dbPath, sqlite.WithLogger(log))
		if err != nil {
			t.Fatalf("sqlite.Open: %v", err)
		}
		return db
	}
	db := open()
	th, _, err := db.EnsureThread(ctx, storage.ThreadKey{Platform: "slack", Team: "T1", Channel: "C1", Thread: "1"}, storage.ThreadInit{})
	if err != nil {
		t.Fatalf("EnsureThread: %v", err)
	}
	row, err := db.CreateSession(ctx, th.ID, storage.SessionInit{Model: "fake-model"})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	start := func() *agent.Session {
		entries, err := db.LoadLiveEntries(ctx, row.ID)
		if err != nil {
			t.Fatalf("LoadLiveEntries: %v", err)
		}
		s, err := agent.New(agent.Config{
			ID: row.ID, Model: client, ModelName: "fake-model", SystemPrompt: "You are a test agent.",
			Tools: []agent.Tool{&testTool{name: "probe", readOnly: true}}, MaxTokens: 1000, ContextWindow: 128000,
			Store: db, Entries: entries, Logger: log,
			Compaction: compaction.Settings{Enabled: false, ReserveTokens: 16384, KeepRecentTokens: 20000},
		})
		if err != nil {
			t.Fatalf("agent.New: %v", err)
		}
		return s
	}
	stop := func(s *agent.Session) {
		if err := s.Close(ctx); err != nil {
			t.Fatalf("session Close: %v", err)
		}
	}
	sess := start()
	for i := 1; i <= n; i++ {
		if err := sess.Prompt(ctx, fmt.Sprintf("turn %d: run the probe", i), agent.PromptOptions{}); err != nil {
			t.Fatalf("Prompt %d: %v", i, err)
		}
		switch at[i] {
		case "restart":
			stop(sess)
			if err := db.Close(); err != nil {
				t.Fatalf("storage Close: %v", err)
			}
			db = open()
			sess = start()
		case "evict":
			stop(sess)
			sess = start()
		}
	}
	stop(sess)
	if err := db.Close(); err != nil {
		t.Fatalf("storage Close: %v", err)
	}

	reqs := bodies()
	if len(reqs) != 2*n {
		t.Fatalf("got %d requests, want %d", len(reqs), 2*n)
	}
	var repeated, total int
	for i := range reqs {
		cur := split(t, reqs[i])
		total += len(cur.messages)
		if i == 0 {
			continue
		}
		prev := split(t, reqs[i-1])
		if !bytes.Equal(prev.rest, cur.rest) {
			t.Errorf("request %d: fields other than messages changed:\n%s\nwas\n%s", i+1, cur.rest, prev.rest)
		}
		head := bytes.TrimSuffix(prev.messages, []byte("]"))
		common := commonPrefix(head, cur.messages)
		repeated += common
		if common != len(head) {
			t.Errorf("request %d does not extend request %d: they differ from byte %d:\nnow: %s\nwas: %s",
				i+1, i, common, excerpt(cur.messages, common), excerpt(head, common))
		}
	}
	return float64(repeated) / float64(total)
}

// The same invariant on the Anthropic wire. Anthropic's cache is keyed by the
// content, not by where the cache_control markers sit (the last block's marker
// moves forward every request), so the markers are left out of the comparison.
func TestEveryAnthropicRequestExtendsThePreviousOne(t *testing.T) {
	fake := anthropicfake.New(t)
	turn := 0
	fake.Handle(func(req anthropicfake.Request) anthropicfake.Response {
		if len(req.LastMessage().Content) > 0 && req.LastMessage().Content[0].Type == "tool_result" {
			return anthropicfake.Reply(anthropicfake.Text("done <ok> & fine"))
		}
		turn++
		return anthropicfake.Reply(
			anthropicfake.Thinking(fmt.Sprintf("thinking %d", turn), fmt.Sprintf("sig-%d", turn)),
			anthropicfake.ToolUse(fmt.Sprintf("toolu_%d", turn), "probe", fmt.Sprintf(`{"x": "step %d && echo <out>",  "n": [1, 2]}`, turn)))
	})
	client, err := anthropic.New(anthropic.Config{BaseURL: fake.URL(), APIKey: "sk-ant"})
	if err != nil {
		t.Fatal(err)
	}
	bodies := func() (out [][]byte) {
		for _, r := range fake.Requests() {
			out = append(out, r.Body)
		}
		return out
	}
	share := driveTurns(t, client, bodies, splitAnthropicBody, 30, map[int]string{10: "restart", 20: "evict"})
	t.Logf("cacheable-prefix share of the request bytes over 30 turns: %.4f", share)
	if share < 0.95 {
		t.Errorf("cacheable-prefix share of the request bytes = %.3f, want ≥ 0.95", share)
	}
}

var cacheControl = regexp.MustCompile(`,?"cache_control":\{[^}]*\}`)

func splitAnthropicBody(t *testing.T, body []byte) requestParts {
	return splitBody(t, cacheControl.ReplaceAll(body, nil))
}

type requestParts struct {
	messages []byte // the messages array as sent
	rest     []byte // every other field, as sent
}

func splitBody(t *testing.T, body []byte) requestParts {
	t.Helper()
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		t.Fatalf("request body: %v", err)
	}
	p := requestParts{messages: fields["messages"]}
	delete(fields, "messages")
	p.rest, _ = json.Marshal(fields)
	return p
}

func commonPrefix(a, b []byte) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func excerpt(b []byte, at int) string {
	lo, hi := max(at-60, 0), min(at+60, len(b))
	return string(b[lo:hi])
}
