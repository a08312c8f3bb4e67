package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/storage"
)

// The session page lists the thread's decisions among its items, in the
// order they were made, with who made each and when; a name made to inject
// markup stays text.
func TestSessionPageListsTheDecisions(t *testing.T) {
	f := newFixture(t)
	f.prompt("Alice Example", "!plan add a flag")
	f.append(msg(answer("PLAN: add --flag")))
	for _, d := range []storage.Decision{
		{Kind: storage.DecisionPlan, UserID: "U1", UserName: "Alice Example", Detail: "add a flag"},
		{Kind: storage.DecisionRevise, UserID: "U2", UserName: "<b>Bob</b>", Detail: "call it --verbose"},
		{Kind: storage.DecisionApprove, UserID: "U3"},
		{Kind: storage.DecisionPush, UserID: "U1", UserName: "Alice Example", Detail: f.thread.Branch},
		{Kind: storage.DecisionCancel, UserID: "U1", UserName: "Alice Example"},
	} {
		d.ThreadID, d.SessionID = f.thread.ID, f.sess.ID
		if _, err := f.db.RecordDecision(f.ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	s := New(Options{Store: f.db, Key: []byte(testKey), PublicURL: "https://bot.example.com"})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	code, body := get(t, f.pageURL(srv, s), nil)
	if code != http.StatusOK {
		t.Fatalf("GET page = %d\n%s", code, body)
	}
	last := strings.Index(body, "PLAN: add --flag")
	for _, want := range []string{
		"📝 plan offered for approval, requested by <strong>Alice Example</strong>: <q>add a flag</q>",
		"✏️ revision asked for by <strong>&lt;b&gt;Bob&lt;/b&gt;</strong>: <q>call it --verbose</q>",
		"✅ plan approved by <strong>U3</strong>",
		"⬆️ push approved by <strong>Alice Example</strong>: <q>bot/slack-1700000000.000100</q>",
		"🚫 plan cancelled by <strong>Alice Example</strong>",
	} {
		i := strings.Index(body, want)
		if i < 0 {
			t.Errorf("the page lacks %q", want)
			continue
		}
		if i < last {
			t.Errorf("%q is not after what came before it", want)
		}
		last = i
	}
	if n := strings.Count(body, `class="item decision decision-`); n != 5 {
		t.Errorf("%d decision items, want 5", n)
	}
	assertInert(t, body)
}
