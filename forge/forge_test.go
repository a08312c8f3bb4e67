package forge_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/forge"
	"github.com/threadsmith/threadsmith/internal/fakes/forgefake"
)

// openedRequest is a fake forge of kind with a client of it, and the
// request the client opened from bot/x into main.
func openedRequest(t *testing.T, kind string) (*forgefake.Server, *forge.Client, forge.PR) {
	t.Helper()
	fake := forgefake.New(t, kind, "acme/app", "tok")
	c, _ := forge.New(forge.Config{Kind: kind, APIURL: fake.APIURL(), Project: "acme/app", Token: "tok"})
	pr, err := c.Ensure(t.Context(), forge.Request{Head: "bot/x", Base: "main", Title: "t", Body: "b"})
	if err != nil {
		t.Fatal(err)
	}
	return fake, c, pr
}

func TestEnsureOpensThenUpdatesOnEveryForge(t *testing.T) {
	for _, kind := range []string{forge.GitHub, forge.GitLab, forge.Gitea} {
		t.Run(kind, func(t *testing.T) {
			fake := forgefake.New(t, kind, "acme/app", "tok-123")
			c, err := forge.New(forge.Config{Kind: kind, APIURL: fake.APIURL(), Project: "acme/app", Token: "tok-123"})
			if err != nil {
				t.Fatal(err)
			}
			req := forge.Request{Head: "bot/slack-1", Base: "main", Title: "add a hello file", Body: "first body", Draft: true}
			pr, err := c.Ensure(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if !pr.Created || pr.Number != 1 || pr.URL == "" || !pr.Draft {
				t.Fatalf("first Ensure: %+v", pr)
			}
			// A push costs the forge's rate limit two calls: a look and a
			// create, or a look and an update.
			if calls := fake.Calls(); len(calls) != 2 {
				t.Errorf("opening took %d calls, want 2: %q", len(calls), calls)
			}
			req.Body = "second body"
			fake.Rename(1, "a better title, by a person")
			pr2, err := c.Ensure(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if pr2.Created || pr2.Number != 1 || pr2.URL != pr.URL {
				t.Fatalf("second Ensure: %+v, want the same request updated", pr2)
			}
			if calls := fake.Calls(); len(calls) != 4 {
				t.Errorf("opening and updating took %d calls, want 4: %q", len(calls), calls)
			}
			prs := fake.PRs()
			if len(prs) != 1 || prs[0].Body != "second body" || prs[0].Head != "bot/slack-1" || prs[0].Base != "main" || prs[0].Updates != 1 || !prs[0].Draft ||
				prs[0].Title != "a better title, by a person" {
				t.Fatalf("the forge holds %+v", prs)
			}
			// Another branch gets its own request.
			if pr3, err := c.Ensure(t.Context(), forge.Request{Head: "bot/slack-2", Base: "main", Title: "t", Body: "b"}); err != nil || pr3.Number != 2 {
				t.Fatalf("other branch: %+v %v", pr3, err)
			}
		})
	}
}

func TestCommentsOnEveryForge(t *testing.T) {
	for _, kind := range []string{forge.GitHub, forge.GitLab, forge.Gitea} {
		t.Run(kind, func(t *testing.T) {
			fake, c, pr := openedRequest(t, kind)
			fake.AddComment(pr.Number, forgefake.Comment{ID: 7, Author: "rev", Body: "rename this", Path: "main.go", Line: 3, Review: true})
			fake.AddComment(pr.Number, forgefake.Comment{ID: 9, Author: "rev", Body: "and add a test"})
			cs, err := c.Comments(t.Context(), pr.Number)
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) != 2 || cs[0].Path != "main.go" || cs[0].Line != 3 || cs[0].Author != "rev" || cs[1].Body != "and add a test" || cs[0].Key == cs[1].Key {
				t.Fatalf("comments %+v", cs)
			}
		})
	}
}

func TestRequestOpenedMeanwhileIsFoundNotDuplicated(t *testing.T) {
	for _, kind := range []string{forge.GitHub, forge.GitLab, forge.Gitea} {
		t.Run(kind, func(t *testing.T) {
			fake := forgefake.New(t, kind, "acme/app", "tok")
			c, _ := forge.New(forge.Config{Kind: kind, APIURL: fake.APIURL(), Project: "acme/app", Token: "tok"})
			if _, err := c.Ensure(t.Context(), forge.Request{Head: "bot/y", Base: "main", Title: "t", Body: "one"}); err != nil {
				t.Fatal(err)
			}
			// Opened between our look and our create: the forge's "already
			// exists" leads to it, and it is updated.
			fake.MissNextList()
			if pr, err := c.Ensure(t.Context(), forge.Request{Head: "bot/y", Base: "main", Title: "t", Body: "two"}); err != nil || pr.Created || pr.Number != 1 {
				t.Fatalf("Ensure after a missed look: %+v, %v", pr, err)
			}
			if prs := fake.PRs(); len(prs) != 1 || prs[0].Body != "two" {
				t.Fatalf("requests %+v", prs)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	fake := forgefake.New(t, forge.GitHub, "acme/app", "tok")
	c, _ := forge.New(forge.Config{Kind: forge.GitHub, APIURL: fake.APIURL(), Project: "acme/app", Token: "tok"})
	fake.Forbid(true)
	_, err := c.Ensure(t.Context(), forge.Request{Head: "h", Base: "main", Title: "t"})
	var fe *forge.Error
	if !errors.As(err, &fe) || !fe.Refused || fe.Status != 403 || !strings.Contains(err.Error(), "Resource not accessible") {
		t.Fatalf("403: %v", err)
	}
	fake.Forbid(false)
	wrong, _ := forge.New(forge.Config{Kind: forge.GitHub, APIURL: fake.APIURL(), Project: "acme/app", Token: "nope-secret"})
	_, err = wrong.Ensure(t.Context(), forge.Request{Head: "h", Base: "main", Title: "t"})
	if !errors.As(err, &fe) || !fe.Refused || strings.Contains(err.Error(), "nope-secret") {
		t.Fatalf("bad token: %v", err)
	}
	if _, err := forge.New(forge.Config{Kind: forge.GitHub, APIURL: fake.APIURL(), Project: "acme/app"}); !errors.As(err, &fe) || !fe.Refused {
		t.Fatalf("no token: %v", err)
	}
}

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		remote, forge, api string
		want               forge.Config
	}{
		{"https://github.com/acme/app.git", "", "", forge.Config{Kind: "github", APIURL: "https://api.github.com", Project: "acme/app"}},
		{"git@github.com:acme/app.git", "", "", forge.Config{Kind: "github", APIURL: "https://api.github.com", Project: "acme/app"}},
		{"https://ghe.corp.example/acme/app", "github", "", forge.Config{Kind: "github", APIURL: "https://ghe.corp.example/api/v3", Project: "acme/app"}},
		{"https://gitlab.com/group/sub/app.git", "", "", forge.Config{Kind: "gitlab", APIURL: "https://gitlab.com/api/v4", Project: "group/sub/app"}},
		{"ssh://git@codeberg.org/me/app.git", "", "", forge.Config{Kind: "gitea", APIURL: "https://codeberg.org/api/v1", Project: "me/app"}},
		{"https://git.internal/team/app", "forgejo", "https://git.internal/api/v1/", forge.Config{Kind: "gitea", APIURL: "https://git.internal/api/v1", Project: "team/app"}},
	} {
		got, err := forge.Resolve(tc.remote, tc.forge, tc.api, "")
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%q, %q) = %+v, %v; want %+v", tc.remote, tc.forge, got, err, tc.want)
		}
	}
	for _, bad := range []string{"/srv/git/app.git", "file:///srv/app", "https://unknown.example/a/b"} {
		if _, err := forge.Resolve(bad, "", "", ""); err == nil {
			t.Errorf("Resolve(%q): want an error", bad)
		}
	}
}

// Anyone who can fork the project can open a request from a branch named
// like the thread's: Ensure and Find never take it for the thread's own
// (whose body the bot would overwrite and whose comments it would read as
// the thread's review).
func TestAForkWithTheThreadsBranchNameIsNotItsRequest(t *testing.T) {
	for _, kind := range []string{forge.GitHub, forge.GitLab, forge.Gitea} {
		t.Run(kind, func(t *testing.T) {
			fake := forgefake.New(t, kind, "acme/app", "tok")
			fork := fake.AddFork("mallory/app", "bot/x", "main", "innocent")
			c, _ := forge.New(forge.Config{Kind: kind, APIURL: fake.APIURL(), Project: "acme/app", Token: "tok"})
			if _, ok, err := c.Find(t.Context(), "bot/x", "main"); err != nil || ok {
				t.Fatalf("Find before the thread's request: ok=%v err=%v, want none", ok, err)
			}
			pr, err := c.Ensure(t.Context(), forge.Request{Head: "bot/x", Base: "main", Title: "t", Body: "the thread's body"})
			if err != nil {
				t.Fatal(err)
			}
			if !pr.Created || pr.Number == fork {
				t.Fatalf("Ensure gave %+v: the fork's request #%d", pr, fork)
			}
			if got, ok, err := c.Find(t.Context(), "bot/x", "main"); err != nil || !ok || got.Number != pr.Number {
				t.Fatalf("Find: %+v %v %v, want #%d", got, ok, err, pr.Number)
			}
			for _, p := range fake.PRs() {
				if p.Number == fork && (p.Body != "" || p.Updates != 0) {
					t.Fatalf("the fork's request was changed: %+v", p)
				}
			}
		})
	}
}

// Each forge's rate limit, answered as it is sent (GitHub's primary limit a
// 403 with X-RateLimit-Remaining 0 and a reset time but no Retry-After, its
// secondary limit a 403 with Retry-After, GitLab's a 429 in plain text), is
// a rate limit with its wait, never a refusal: a refusal is told to the
// thread once and then kept quiet.
func TestRateLimitsOfEveryForge(t *testing.T) {
	for _, tc := range []struct {
		kind      string
		secondary bool
	}{{forge.GitHub, false}, {forge.GitHub, true}, {forge.GitLab, false}, {forge.Gitea, false}} {
		t.Run(fmt.Sprintf("%s secondary=%v", tc.kind, tc.secondary), func(t *testing.T) {
			fake := forgefake.New(t, tc.kind, "acme/app", "tok")
			c, _ := forge.New(forge.Config{Kind: tc.kind, APIURL: fake.APIURL(), Project: "acme/app", Token: "tok"})
			if tc.secondary {
				fake.SecondaryRateLimit(true)
			} else {
				fake.RateLimit(true)
			}
			_, err := c.Ensure(t.Context(), forge.Request{Head: "h", Base: "main", Title: "t"})
			var fe *forge.Error
			if !errors.As(err, &fe) || fe.Refused || !strings.Contains(err.Error(), "rate limit") {
				t.Fatalf("rate limit: %#v", err)
			}
			// The reset is a minute away; a reset time in whole seconds may
			// read as a little less.
			if fe.RetryAfter < 58*time.Second || fe.RetryAfter > forgefake.RateLimitReset*time.Second || !strings.Contains(err.Error(), "about 1 min") {
				t.Errorf("wait %v, message %q; want about a minute", fe.RetryAfter, err)
			}
		})
	}
}

// GitLab's messages are lists and field maps, not strings: the thread is
// told what GitLab said, not only "Bad Request".
func TestGitLabMessagesAreRead(t *testing.T) {
	fake := forgefake.New(t, forge.GitLab, "acme/app", "tok")
	c, _ := forge.New(forge.Config{Kind: forge.GitLab, APIURL: fake.APIURL(), Project: "acme/app", Token: "tok"})
	_, err := c.Ensure(t.Context(), forge.Request{Head: "h", Base: "main", Title: strings.Repeat("t", 300)})
	if err == nil || !strings.Contains(err.Error(), "title is too long (maximum is 255 characters)") {
		t.Errorf("a long title: %v", err)
	}
}

// A primary rate limit whose reset time has passed by the bot's clock (the
// forge's clock runs behind) is still a rate limit, not a refusal.
func TestRateLimitWithAResetInThePast(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(-10*time.Second).Unix(), 10))
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"message":"API rate limit exceeded for user ID 1."}`))
	}))
	t.Cleanup(srv.Close)
	c, _ := forge.New(forge.Config{Kind: forge.GitHub, APIURL: srv.URL, Project: "acme/app", Token: "tok"})
	_, _, err := c.Find(t.Context(), "h", "main")
	var fe *forge.Error
	if !errors.As(err, &fe) || fe.Refused || fe.RetryAfter != 0 || !strings.Contains(err.Error(), "rate limit") {
		t.Fatalf("%#v", err)
	}
}

// A request with more comments than a page holds (GitHub 100, GitLab 100 a
// page at most) gives them all: the newest are on the last page, and they
// are the ones a reviewer just wrote.
func TestCommentsOfEveryPage(t *testing.T) {
	for _, kind := range []string{forge.GitHub, forge.GitLab, forge.Gitea} {
		t.Run(kind, func(t *testing.T) {
			fake, c, pr := openedRequest(t, kind)
			for i := range 250 {
				fake.AddComment(pr.Number, forgefake.Comment{ID: int64(i + 1), Author: "rev", Body: fmt.Sprint("comment ", i+1), Path: "a.go", Line: 1, Review: i%2 == 0})
			}
			cs, err := c.Comments(t.Context(), pr.Number)
			if err != nil {
				t.Fatal(err)
			}
			if len(cs) != 250 || cs[0].Body != "comment 1" || cs[249].Body != "comment 250" {
				t.Fatalf("%d comments, first %+v, last %+v; want all 250 in order", len(cs), cs[0], cs[len(cs)-1])
			}
		})
	}
}

// A Link header's next page on another host is not followed: the token is
// sent to the API's host only.
func TestNextPageElsewhereIsNotFollowed(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		_, _ = w.Write([]byte(`[]`))
	}))
	t.Cleanup(other.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", `<`+other.URL+`/api/v3/repos/acme/app/pulls/1/comments?page=2>; rel="next"`)
		_, _ = w.Write([]byte(`[{"id":1,"user":{"login":"rev"},"body":"one"}]`))
	}))
	t.Cleanup(srv.Close)
	c, _ := forge.New(forge.Config{Kind: forge.GitHub, APIURL: srv.URL + "/api/v3", Project: "acme/app", Token: "tok"})
	cs, err := c.Comments(t.Context(), 1)
	if err != nil || len(cs) != 2 {
		t.Fatalf("%+v %v", cs, err)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the next page on another host was asked for %d times", n)
	}
}

// A forge that redirects a call to another host does not get the token
// sent there, on any forge (GitLab's PRIVATE-TOKEN header was).
func TestRedirectElsewhereCarriesNoToken(t *testing.T) {
	for _, kind := range []string{forge.GitHub, forge.GitLab, forge.Gitea} {
		t.Run(kind, func(t *testing.T) {
			var leaked atomic.Value
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range r.Header {
					if strings.Contains(strings.Join(v, " "), "tok-secret") {
						leaked.Store(k)
					}
				}
				_, _ = w.Write([]byte(`[]`))
			}))
			t.Cleanup(other.Close)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+r.URL.RequestURI(), http.StatusFound)
			}))
			t.Cleanup(srv.Close)
			c, _ := forge.New(forge.Config{Kind: kind, APIURL: srv.URL + "/api", Project: "acme/app", Token: "tok-secret"})
			_, _ = c.Comments(t.Context(), 1)
			if k := leaked.Load(); k != nil {
				t.Errorf("the token reached the other host in %v", k)
			}
		})
	}
}

// A review's own text (what a reviewer writes when submitting "Request
// changes") is among the comments, with its verdict, on the forges that
// have reviews; on GitLab it is a note. Comments come in the order they
// were written, though each kind is numbered in its own sequence.
func TestReviewSummariesAndOrder(t *testing.T) {
	for _, kind := range []string{forge.GitHub, forge.GitLab, forge.Gitea} {
		t.Run(kind, func(t *testing.T) {
			fake, c, pr := openedRequest(t, kind)
			verdict := map[string]string{forge.GitHub: "CHANGES_REQUESTED", forge.Gitea: "REQUEST_CHANGES", forge.GitLab: "x"}[kind]
			fake.AddComment(pr.Number, forgefake.Comment{ID: 900, Author: "rev", Body: "off by one", Path: "a.go", Line: 4, Review: true})
			fake.AddComment(pr.Number, forgefake.Comment{ID: 5, Author: "rev", Body: "handle the empty list too", State: verdict})
			fake.AddComment(pr.Number, forgefake.Comment{ID: 10, Author: "ann", Body: "thanks"})
			if kind != forge.GitLab {
				// An approval without words, and a pending review, add nothing.
				fake.AddComment(pr.Number, forgefake.Comment{ID: 11, Author: "rev", State: "APPROVED"})
				fake.AddComment(pr.Number, forgefake.Comment{ID: 12, Author: "rev", Body: "draft", State: "PENDING"})
			}
			cs, err := c.Comments(t.Context(), pr.Number)
			if err != nil {
				t.Fatal(err)
			}
			var bodies []string
			for _, cm := range cs {
				bodies = append(bodies, cm.Body)
			}
			if strings.Join(bodies, "|") != "off by one|handle the empty list too|thanks" {
				t.Fatalf("comments %q, want the line comment, the review's text and the general comment, in that order", bodies)
			}
			if kind != forge.GitLab && cs[1].State != "changes requested" {
				t.Errorf("the review's verdict: %q", cs[1].State)
			}
			if cs[0].Key == cs[1].Key || cs[1].Key == cs[2].Key {
				t.Errorf("keys %q %q %q are not distinct", cs[0].Key, cs[1].Key, cs[2].Key)
			}
			// Gitea lists a review's line comments with a call per review:
			// not for the reviews that hold none.
			for _, call := range fake.Calls() {
				if strings.HasSuffix(call, "/reviews/5/comments") || strings.HasSuffix(call, "/reviews/11/comments") {
					t.Errorf("asked for the line comments of a review without any: %s", call)
				}
			}
		})
	}
}

// Who may push, asked where a webhook does not say (GitLab, Gitea): a
// developer or more, the owner of a user's repository; not a reporter, a
// stranger, or a user id that is no number. A Gitea token that may not
// see others' permissions asks whether they are a collaborator.
func TestMayWrite(t *testing.T) {
	gl := forgefake.New(t, forge.GitLab, "acme/app", "tok")
	c, _ := forge.New(forge.Config{Kind: forge.GitLab, APIURL: gl.APIURL(), Project: "acme/app", Token: "tok"})
	gl.SetAccess("7", 30)
	gl.SetAccess("8", 20)
	for user, want := range map[string]bool{"7": true, "8": false, "9": false, "../7": false} {
		if got, err := c.MayWrite(t.Context(), user); err != nil || got != want {
			t.Errorf("gitlab user %s: %v %v, want %v", user, got, err, want)
		}
	}
	gt := forgefake.New(t, forge.Gitea, "acme/app", "tok")
	c, _ = forge.New(forge.Config{Kind: forge.Gitea, APIURL: gt.APIURL(), Project: "acme/app", Token: "tok"})
	gt.SetAccess("dev", 30)
	gt.SetAccess("reader", 10)
	for user, want := range map[string]bool{"dev": true, "reader": false, "mallory": false, "ACME": true} {
		if got, err := c.MayWrite(t.Context(), user); err != nil || got != want {
			t.Errorf("gitea user %s: %v %v, want %v", user, got, err, want)
		}
	}
	gt.TokenNotAdmin(true)
	for user, want := range map[string]bool{"dev": true, "mallory": false} {
		if got, err := c.MayWrite(t.Context(), user); err != nil || got != want {
			t.Errorf("gitea user %s, token not admin: %v %v, want %v", user, got, err, want)
		}
	}
}

// A GitHub repository without draft pull requests (private, on a plan
// without them) gets one ready for review instead of none.
func TestGitHubWithoutDraftsOpensOneReady(t *testing.T) {
	fake := forgefake.New(t, forge.GitHub, "acme/app", "tok")
	fake.NoDrafts(true)
	c, _ := forge.New(forge.Config{Kind: forge.GitHub, APIURL: fake.APIURL(), Project: "acme/app", Token: "tok"})
	pr, err := c.Ensure(t.Context(), forge.Request{Head: "bot/x", Base: "main", Title: "t", Body: "b", Draft: true})
	if err != nil || !pr.Created || pr.Draft {
		t.Fatalf("%+v %v, want one opened, not a draft", pr, err)
	}
	if prs := fake.PRs(); len(prs) != 1 || prs[0].Draft {
		t.Fatalf("the forge holds %+v", prs)
	}
}
