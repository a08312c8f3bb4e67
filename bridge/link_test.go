package bridge

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// With session pages on, a run's footer, !status and !link carry a fresh
// link to the thread's page; the link names the thread's storage id.
func TestFooterStatusAndLinkCarryTheSessionPage(t *testing.T) {
	t.Parallel()
	var minted atomic.Int64
	r := newRig(t, func(c *Config, _ *Platform) {
		c.PageLink = func(id int64) string {
			return "https://bot.example.com/s/" + strconv.FormatInt(id, 10) + "?t=tok" + strconv.FormatInt(minted.Add(1), 10)
		}
	})
	r.llm.Push(llmfake.TextReply("done"))
	th := testThread("73.1")
	r.say(th, alice, "do it", true)
	r.waitRuns(th, 1)
	rec, err := r.thread(th)
	if err != nil {
		t.Fatal(err)
	}
	page := "https://bot.example.com/s/" + strconv.FormatInt(rec.ID, 10)
	r.waitText(th, "[full session]("+page)
	r.say(th, alice, "!status", false)
	r.waitText(th, "• Session page: [everything this thread did]("+page)
	r.say(th, alice, "!link", false)
	r.waitText(th, "🔗 [This session's page]("+page)
	if tr := r.chat.Transcript(th); strings.Count(tr, page+"?t=tok") < 3 {
		t.Errorf("want three links, each with its own token:\n%s", tr)
	}
}

// Without pages, nothing links and !link says why.
func TestLinkWithoutSessionPages(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	r.llm.Push(llmfake.TextReply("done"))
	th := testThread("73.2")
	r.say(th, alice, "do it", true)
	r.waitRuns(th, 1)
	r.say(th, alice, "!link", false)
	r.waitText(th, "Session pages are off here")
	if tr := r.chat.Transcript(th); strings.Contains(tr, "full session") {
		t.Errorf("a footer links a page that does not exist:\n%s", tr)
	}
}
