package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/config"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
	"github.com/threadsmith/threadsmith/ops/opstest"
	"github.com/threadsmith/threadsmith/storage"
)

// pageLinkRe finds a session page link in Slack text (<url|label>).
var pageLinkRe = regexp.MustCompile(`http://pages\.test(/s/\d+\?t=[A-Za-z0-9._%-]+)`)

// With http.public_url, a run's footer and !status link the thread's session
// page; the link opens it (the operator's proxy would forward public_url to
// http.listen), with the prompt, the tool call, the answer and the push, and
// the same page without the link's token is refused.
func TestSlackFooterAndStatusLinkTheSessionPage(t *testing.T) {
	t.Parallel()
	const key = "e2e-session-key-0123456789abcdef0123"
	e := newSlackEnv(t, withConfig(func(c *config.Config) {
		c.HTTP.Listen = "127.0.0.1:0"
		c.HTTP.PublicURL = "http://pages.test"
		c.HTTP.SessionKey = key
	}))
	e.llm.Push(
		llmfake.ToolCallReply(llmfake.Call{ID: "c1", Name: "write", Args: `{"path":"notes.txt","content":"from the page test\n"}`}),
		llmfake.TextReply("I wrote **notes.txt**."),
	)
	root := e.slack.Mention(slackChan, aliceID, "write the notes", "")
	e.waitText(slackChan, root, "⬆️ pushed `bot/slack-")
	e.waitText(slackChan, root, "|full session>")
	footer := pageLinkRe.FindStringSubmatch(e.threadText(slackChan, root))
	if footer == nil {
		t.Fatalf("no session page link in the thread:\n%s", e.transcript(slackChan, root))
	}

	e.slack.UserMessage(slackChan, aliceID, "!status", root)
	e.waitText(slackChan, root, "• Session page:")
	var status []string
	for _, m := range e.botMessages(slackChan, root) {
		if strings.Contains(m.Text, "Session page") {
			status = pageLinkRe.FindStringSubmatch(m.Text)
		}
	}
	if status == nil {
		t.Fatalf("!status has no session page link:\n%s", e.transcript(slackChan, root))
	}

	base := "http://" + e.m.HTTPAddr()
	for _, link := range []string{footer[1], status[1]} {
		code, body := opstest.Get(t, base+link)
		if code != http.StatusOK {
			t.Fatalf("GET %s = %d\n%s", link, code, body)
		}
		for _, want := range []string{"write the notes", `<code class="tool-name">write</code>`, "notes.txt", "I wrote <strong>notes.txt</strong>.", "push of <code>bot/slack-",
			`<span class="file">&#43;&#43;&#43; b/notes.txt</span>`, `<span class="add">&#43;from the page test</span>`} {
			if !strings.Contains(body, want) {
				t.Errorf("the page lacks %q", want)
			}
		}
		if strings.Contains(body, key) || strings.Contains(body, "sk-test-key") {
			t.Error("the page shows a secret")
		}
	}
	page, _, _ := strings.Cut(footer[1], "?")
	if code, _ := opstest.Get(t, base+page); code != http.StatusUnauthorized {
		t.Errorf("GET %s without the token = %d, want 401", page, code)
	}
	// The operator's endpoints still answer beside the pages.
	if code, _ := opstest.Get(t, base+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz = %d, want 200", code)
	}
}

// Every configured key is redacted: from tool output and from the session
// pages.
func TestSecretsListEveryKey(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.LLM.APIKey = "sk-main-key"
	cfg.LLM.BaseURL = "https://proxy.example/v1?key=proxy-key-0123456789&region=eu"
	cfg.LLM.Models = []config.Model{{Name: "other", APIKey: "sk-other-endpoint", BaseURL: "https://user:endpoint-password@other.example/v1?api-key=other-query-key-0123"}}
	cfg.HTTP.SessionKey = "the-session-key-0123456789abcdef0123"
	cfg.Workspace.Repos = []config.Repo{{Name: "app", Token: "ghp-repo-token"}}
	got := secrets(&cfg)
	for _, want := range []string{"sk-main-key", "sk-other-endpoint", cfg.HTTP.SessionKey, "ghp-repo-token",
		"proxy-key-0123456789", "endpoint-password", "other-query-key-0123"} {
		if !slices.Contains(got, want) {
			t.Errorf("secrets lack %q: %q", want, got)
		}
	}
}

// A command that printed more than the model may read: the session page
// links everything it printed, from the file bash kept in the scratch
// folder, and that page begins where the output began.
func TestSessionPageShowsAllACommandPrinted(t *testing.T) {
	t.Parallel()
	e := newSlackEnv(t, withConfig(func(c *config.Config) {
		c.HTTP.Listen = "127.0.0.1:0"
		c.HTTP.PublicURL = "http://pages.test"
		c.HTTP.SessionKey = "e2e-session-key-0123456789abcdef0123"
	}))
	e.llm.Push(
		llmfake.ToolCallReply(llmfake.Call{ID: "b1", Name: "bash", Args: `{"command":"seq -f 'row %05g' 1 5000"}`}),
		llmfake.TextReply("It printed 5,000 rows."),
	)
	root := e.slack.Mention(slackChan, aliceID, "print the rows", "")
	e.waitText(slackChan, root, "|full session>")
	link := pageLinkRe.FindStringSubmatch(e.threadText(slackChan, root))
	if link == nil {
		t.Fatalf("no session page link:\n%s", e.transcript(slackChan, root))
	}
	base := "http://" + e.m.HTTPAddr()
	_, body := opstest.Get(t, base+link[1])
	if strings.Contains(body, "row 00001\n") {
		t.Fatal("the model got the whole output: the test needs a longer one")
	}
	full := regexp.MustCompile(`href="(/s/\d+/full/[^"]+)"`).FindStringSubmatch(body)
	if full == nil || !strings.Contains(body, "The command printed 5001 lines") {
		t.Fatalf("the page does not link everything the command printed:\n%s", body)
	}
	code, page := opstest.Get(t, base+html.UnescapeString(full[1]))
	if code != http.StatusOK || !strings.Contains(page, "row 00001\nrow 00002\n") || !strings.Contains(page, "row 05000\n") {
		t.Errorf("GET %s = %d, want every row:\n%.600s", full[1], code, page)
	}
}

// The pages open only files in the thread's own scratch folder, whatever
// path a tool result names: not another thread's, not outside, not through
// a symlink that leads out of it.
func TestScratchFileStaysInTheThreadsScratchFolder(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.txt")
	write := func(path, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(outside, "not yours")
	mine := filepath.Join(data, "scratch", "app", "slack-t1")
	log := filepath.Join(mine, "bash", "bash-1.log")
	write(log, "all of it")
	theirs := filepath.Join(data, "scratch", "app", "slack-t2", "bash", "bash-1.log")
	write(theirs, "another thread's")
	if err := os.Symlink(outside, filepath.Join(mine, "bash", "link.log")); err != nil {
		t.Fatal(err)
	}
	// A link that stays in the folder is not followed either: the agent
	// chose where it leads.
	if err := os.Symlink("bash-1.log", filepath.Join(mine, "bash", "inlink.log")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("bash", filepath.Join(mine, "bashlink")); err != nil {
		t.Fatal(err)
	}
	open := scratchFile(data, "bot/")
	th := storage.Thread{ID: 1, Repo: "app", Branch: "bot/slack-t1"}
	f, err := open(th, log)
	if err != nil {
		t.Fatalf("opening %s: %v", log, err)
	}
	f.Close()
	// The agent may put a named pipe where an output was: opening it must
	// neither block the page nor succeed.
	fifo := filepath.Join(mine, "bash", "fifo.log")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{theirs, outside, fifo, filepath.Join(mine, "..", "slack-t2", "bash", "bash-1.log"),
		filepath.Join(mine, "bash", "link.log"), filepath.Join(mine, "bash", "inlink.log"), filepath.Join(mine, "bashlink", "bash-1.log"),
		mine + "-other/x.log", "relative.log"} {
		if f, err := open(th, p); err == nil {
			f.Close()
			t.Errorf("opened %s for thread %s", p, th.Branch)
		}
	}
	for _, other := range []storage.Thread{{Repo: "app", Branch: "other/slack-t1"}, {Repo: "..", Branch: "bot/slack-t1"},
		{Repo: "app", Branch: "bot/../slack-t2"}, {Repo: "app", Branch: "bot/"}} {
		if f, err := open(other, log); err == nil {
			f.Close()
			t.Errorf("opened %s for a thread on %s/%s", log, other.Repo, other.Branch)
		}
	}
}

// The attacker's way to a key in llm.base_url: an endpoint (a proxy) that
// fails quoting the URL it was asked at, query and all. The error reaches the
// thread; the key must not.
func TestLLMEndpointKeyInItsErrorIsRedacted(t *testing.T) {
	t.Parallel()
	const key = "proxy-key-0123456789abcdef"
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		msg, _ := json.Marshal("no such route: " + r.URL.String())
		fmt.Fprintf(w, `{"error":{"message":%s,"type":"invalid_request_error"}}`, msg)
	}))
	t.Cleanup(proxy.Close)
	e := newSlackEnv(t, withConfig(func(c *config.Config) { c.LLM.BaseURL = proxy.URL + "/v1?key=" + key }))
	root := e.slack.Mention(slackChan, aliceID, "hello", "")
	e.waitText(slackChan, root, "no such route")
	if tr := e.threadText(slackChan, root); strings.Contains(tr, key) || !strings.Contains(tr, "[redacted]") {
		t.Errorf("the thread shows the endpoint's key (or no [redacted] where it was):\n%s", tr)
	}
}

// A model call's error loses the key wherever it is told: the typed error's
// message (ErrorInfo, stored with the session), the reply's ErrorMessage and
// a wrapping error's text (Go's transport quotes the URL's query), while
// errors.As still finds the typed error retry decides on.
func TestModelErrorsAreRedacted(t *testing.T) {
	t.Parallel()
	const key = "proxy-key-0123456789abcdef"
	typed := &llm.Error{Kind: llm.ErrorNetwork, Message: `Post "https://proxy/v1/chat/completions?key=` + key + `": connection refused`}
	model := redactErrors(modelFunc(func() (llm.Message, error) {
		return llm.Message{ErrorMessage: typed.Error(), ErrorInfo: typed}, fmt.Errorf("via %s?key=%s: %w", "proxy", key, typed)
	}), []string{key})
	msg, err := model.Stream(t.Context(), llm.Request{}, nil)
	var e *llm.Error
	if !errors.As(err, &e) || e.Kind != llm.ErrorNetwork {
		t.Fatalf("errors.As does not find the typed error in %v", err)
	}
	for what, s := range map[string]string{"err": err.Error(), "typed": e.Message, "ErrorMessage": msg.ErrorMessage, "ErrorInfo": msg.ErrorInfo.Message} {
		if strings.Contains(s, key) || !strings.Contains(s, "[redacted]") {
			t.Errorf("%s shows the key (or no [redacted] where it was): %s", what, s)
		}
	}
}

type modelFunc func() (llm.Message, error)

func (f modelFunc) Stream(context.Context, llm.Request, llm.StreamFunc) (llm.Message, error) {
	return f()
}
