package openai_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

func TestReasoningLevelIsSentAsReasoningEffort(t *testing.T) {
	for _, tc := range []struct{ level, want string }{
		{"high", "high"}, {"minimal", "minimal"}, {"", ""}, {"off", ""},
	} {
		srv := llmfake.New(t)
		srv.Push(llmfake.TextReply("ok"))
		req := llm.Request{Model: "o4-mini", Messages: []llm.Message{llm.UserText("hi")}, MaxTokens: 500, Reasoning: tc.level}
		if _, err := newClient(t, srv.URL()).Stream(testCtx(t), req, nil); err != nil {
			t.Fatalf("%q: Stream: %v", tc.level, err)
		}
		r := srv.Requests()[0]
		var body struct {
			ReasoningEffort *string `json:"reasoning_effort"`
		}
		_ = json.Unmarshal(r.Body, &body)
		got := ""
		if body.ReasoningEffort != nil {
			got = *body.ReasoningEffort
		}
		if got != tc.want || (tc.want == "" && body.ReasoningEffort != nil) {
			t.Errorf("level %q: reasoning_effort = %v, want %q (absent when empty)", tc.level, body.ReasoningEffort, tc.want)
		}
		if r.MaxCompletionTokens != 500 || r.MaxTokens != 0 {
			t.Errorf("level %q: max_completion_tokens=%d max_tokens=%d, want 500, 0", tc.level, r.MaxCompletionTokens, r.MaxTokens)
		}
	}
}

// Arguments a model wrote with spaces and characters encoding/json escapes go
// back exactly as written, from memory and after a JSON round trip (storage).
func TestToolArgumentsGoBackAsTheModelWroteThem(t *testing.T) {
	srv := llmfake.New(t)
	args := `{"cmd": "go test ./... && echo <done>"}`
	srv.Push(llmfake.ToolCallReply(llmfake.Call{ID: "call_1", Name: "bash", Args: args}))
	c := newClient(t, srv.URL())
	reply, err := c.Stream(testCtx(t), llm.Request{Model: "fake-model", Messages: []llm.Message{llm.UserText("test it")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := json.Marshal(reply)
	var restored llm.Message
	if err := json.Unmarshal(stored, &restored); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(restored.Content[0].Arguments), " && ") {
		t.Fatalf("the stored Arguments were not re-encoded; this test proves nothing: %s", restored.Content[0].Arguments)
	}
	for name, m := range map[string]llm.Message{"in memory": reply, "after storage": restored} {
		srv.Push(llmfake.TextReply("ok"))
		result := llm.Message{Role: llm.RoleToolResult, ToolCallID: "call_1", ToolName: "bash", Content: []llm.Content{llm.Text("PASS")}}
		if _, err := c.Stream(testCtx(t), llm.Request{Model: "fake-model", Messages: []llm.Message{llm.UserText("test it"), m, result}}, nil); err != nil {
			t.Fatal(err)
		}
		reqs := srv.Requests()
		sent := reqs[len(reqs)-1].Messages[1].ToolCalls[0].Arguments
		if sent != args {
			t.Errorf("%s: arguments sent as %s, want %s", name, sent, args)
		}
	}
}
