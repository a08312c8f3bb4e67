package bridge

import (
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/openai"
	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// !status shows the thread's totals: prompt tokens and the share the cache
// served, output tokens, replies, and the cost the router priced them at. A
// run's usage is stored with the run when it ends, and !status shows the last
// run's next to the totals: tokens, cache share, cost, models.
func TestStatusShowsTheThreadsUsageAndCost(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	// The router needs the rig's fake server, which exists only now; no
	// session has started yet.
	client, err := openai.New(openai.Config{BaseURL: r.llm.URL(), APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	r.b.cfg.Model = llm.NewRouter(map[string]llm.Route{
		mainModel:  {Model: client, Price: llm.Price{Input: 2, Output: 8, CacheRead: 0.5}},
		otherModel: {Model: client},
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

	rec, err := r.thread(th)
	if err != nil {
		t.Fatal(err)
	}
	// The footer is posted before the run's end is stored.
	r.waitUntil("both runs' usage is stored", func() bool {
		runs, err := r.db.ThreadRunUsage(r.ctx, rec.ID)
		return err == nil && len(runs) == 2
	})
	runs, _ := r.db.ThreadRunUsage(r.ctx, rec.ID)
	var inputs []int64
	for _, u := range runs {
		inputs = append(inputs, u.Input+u.CacheRead)
		if len(u.Models) != 1 || u.Models[0] != mainModel || u.Replies != 1 {
			t.Errorf("run usage %+v, want one reply by %s", u, mainModel)
		}
	}
	if inputs[0]+inputs[1] != 2500 {
		t.Errorf("prompt tokens of the runs = %v, want 1000 and 1500", inputs)
	}

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
	// The second run alone: 1,500 prompt tokens, 1,000 from the cache;
	// (500·2 + 100·8 + 1000·0.5) per million = $0.0023.
	if want := "• Last run: 1.5k in (67% from cache), 100 out over 1 reply, $0.0023 · `" + mainModel + "`"; !strings.Contains(status, want) {
		t.Errorf("!status lacks %q:\n%s", want, status)
	}
	// The second run's footer: (500·2 + 100·8 + 1000·0.5) per million.
	if tr := r.chat.Transcript(th); !strings.Contains(tr, "$0.0023_") {
		t.Errorf("no run footer with the router's cost $0.0023:\n%s", tr)
	}
}
