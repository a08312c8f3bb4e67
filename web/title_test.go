package web

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/storage"
)

// A page's title and its row in the list are the first request's first line.
// A secret in that line is hidden before the line is cut to maxHeadline: not
// shown whole (its "+" is escaped by the template, past the last-line
// replace), nor its start where the cut falls inside it.
func TestRequestTitleHidesSecrets(t *testing.T) {
	const secret = "sk+live+0123456789abcdef"
	for name, prompt := range map[string]string{
		"whole": "use " + secret + " please",
		"cut":   strings.Repeat("a ", 45) + secret + " and more words after it",
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			f.prompt("alice", prompt)
			s := New(Options{Store: f.db, Key: []byte(testKey), PublicURL: "https://bot.example.com", AuthHeader: "X-User", Secrets: []string{secret}})
			srv := httptest.NewServer(s.Handler())
			defer srv.Close()
			_, page := get(t, f.pageURL(srv, s), nil)
			_, list := get(t, srv.URL+"/", http.Header{"X-User": {"op"}})
			for what, body := range map[string]string{"page": page, "list": list} {
				if strings.Contains(body, "sk+live") || strings.Contains(body, "sk&#43;live") {
					t.Errorf("the %s shows the secret, or its start", what)
				}
				if !strings.Contains(body, "[redacted") {
					t.Errorf("the %s's title does not hide the secret:\n%s", what, body)
				}
			}
		})
	}
}

// A console session is named as one, not by its key's repeated parts.
func TestAConsoleThreadIsNamedAsASession(t *testing.T) {
	got := threadTitle(storage.ThreadKey{Platform: "console", Channel: "20260102-150405", Thread: "20260102-150405"})
	if got != "console session 20260102-150405" {
		t.Fatalf("title %q, want console session 20260102-150405", got)
	}
	if got := threadTitle(storage.ThreadKey{Platform: "slack", Channel: "C1", Thread: "1.2"}); got != "slack · C1 · 1.2" {
		t.Fatalf("a Slack thread's title %q changed", got)
	}
}
