package bridge

import (
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/openai"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// !status shows the thread's totals: prompt tokens and the share the cache
// served, output tokens, replies, and the cost the router priced them at.
func TestStatusShowsTheThreadsUsageAndCost(t *testing.T) {
	r := newRig(t)
	// The router needs the rig's fake server, which exists only now; no
	// session has started yet.
	client, err := openai.New(openai.Config{BaseURL: r.llm.URL(), APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	r.b.cfg.Model = llm.NewRouter(map[string]llm.Route{
		mainModel: {Model: client, Price: llm.Price{Input: 2, Output: 8, CacheRead: 0.5}},
	})
	r.llm.Push(
		llmfake.Stream(llmfake.Content("one"), llmfake.Usage(1000, 100, 400), llmfake.Finish("stop")),
		llmfake.Stream(llmfake.Content("two"), llmfake.Usage(1500, 100, 1000), llmfake.Finish("stop")),
	)
	th := testThread("61.1")
	r.say(th, alice, "first", true)
	r.waitRuns(th, 1)
	r.say(th, alice, "second", false)
	r.waitRuns(th, 2)
	r.say(th, alice, "!status", false)
	r.waitText(th, "📊 *Status*")
	var status string
	for _, s := range r.chat.BotTexts(th) {
		if strings.HasPrefix(s, "📊") {
			status = s
		}
	}
	// 2,500 prompt tokens, 1,400 from the cache (56%); cost =
	// (600+500)·2 + 200·8 + 1400·0.5 per million = $0.0045.
	if want := "• Usage: 2.5k in (56% from cache), 200 out over 2 replies, $0.0045"; !strings.Contains(status, want) {
		t.Errorf("!status lacks %q:\n%s", want, status)
	}
	if want := "• Your usage, all threads: 2.5k in"; !strings.Contains(status, want) {
		t.Errorf("!status lacks %q:\n%s", want, status)
	}
	// The second run's footer: (500·2 + 100·8 + 1000·0.5) per million.
	if tr := r.chat.Transcript(th); !strings.Contains(tr, "$0.0023_") {
		t.Errorf("no run footer with the router's cost $0.0023:\n%s", tr)
	}
}
