package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/config"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/ops/opstest"
)

// The model writes the configured LLM key into bash commands, streamed in
// argument deltas that split it: once where the status line shows it
// whole, once where the line's 80-character cut falls inside it. No
// message or edit of the thread, nor the session page, nor the logs has
// the key or a piece of it that the cut left; the status says [redacted].
func TestSecretInToolArgumentsIsRedactedInTheStatus(t *testing.T) {
	t.Parallel()
	e := newSlackFakes(t, withConfig(func(c *config.Config) {
		c.HTTP.Listen = "127.0.0.1:0"
		c.HTTP.PublicURL = "http://pages.test"
		c.HTTP.SessionKey = "e2e-session-key-0123456789abcdef0123"
	}))
	logs := &syncBuffer{}
	e.logOut.w = io.MultiWriter(e.logOut.w, logs)
	e.start()
	secret := e.cfg.LLM.APIKey
	half := len(secret) / 2
	whole := func(s string) string {
		b, _ := json.Marshal(map[string]string{"command": s})
		return string(b)
	}
	shown := whole("curl -sH 'Authorization: Bearer " + secret + "' http://127.0.0.1:9/ || true")
	cut := whole("true '" + strings.Repeat("x", 68) + secret + "'")
	// Each call's arguments arrive in two deltas, the secret split between them.
	split := func(index int, id, args string) []llmfake.Step {
		at := strings.Index(args, secret[:half]) + half
		return []llmfake.Step{
			llmfake.ToolCallFragment(index, id, "bash", ""),
			llmfake.ToolCallFragment(index, "", "", args[:at]),
			llmfake.ToolCallFragment(index, "", "", args[at:]),
		}
	}
	steps := append(split(0, "k1", shown), split(1, "k2", cut)...)
	steps = append(steps, llmfake.Finish("tool_calls"), llmfake.Usage(10, 5, 0), llmfake.Done())
	e.llm.Push(llmfake.Stream(steps...), llmfake.TextReply("Both ran."))

	root := e.slack.Mention(slackChan, aliceID, "call the API", "")
	e.waitText(slackChan, root, "|full session>")
	e.waitFor("the status sealed", func() bool {
		ms := e.botMessages(slackChan, root)
		return len(ms) > 0 && !strings.Contains(ms[0].Text, "working…")
	}, func() string { return e.transcript(slackChan, root) })

	leaks := []string{secret, secret[:6]}
	var texts []string
	for _, c := range e.slack.Calls() {
		if c.Method != "chat.postMessage" && c.Method != "chat.update" {
			continue
		}
		texts = append(texts, c.Params.Get("text"))
		sent := c.Params.Encode() + string(c.Body)
		for _, l := range leaks {
			if strings.Contains(sent, l) || strings.Contains(c.Params.Get("text"), l) {
				t.Errorf("%s sent %q of the key: %s", c.Method, l, c.Params.Get("text"))
			}
		}
	}
	all := strings.Join(texts, "\n---\n")
	if !strings.Contains(all, "Bearer [redacted]") || !strings.Contains(all, "x[red") {
		t.Errorf("no status showed the redacted commands:\n%s", all)
	}
	status := e.threadText(slackChan, root)

	link := pageLinkRe.FindStringSubmatch(status)
	if link == nil {
		t.Fatalf("no session page link:\n%s", status)
	}
	_, page := opstest.Get(t, "http://"+e.m.HTTPAddr()+link[1])
	if strings.Contains(page, secret) || !strings.Contains(page, "[redacted]") {
		t.Errorf("the session page shows the key, or not [redacted]:\n%.2000s", page)
	}
	e.stop()
	if strings.Contains(logs.String(), secret) {
		t.Errorf("the logs have the key:\n%s", logs.String())
	}
}
