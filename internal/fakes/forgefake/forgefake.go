// Package forgefake serves the parts of the GitHub (REST v3), GitLab (v4)
// and Gitea/Forgejo (v1) APIs that open, find, update and comment on pull
// requests, on 127.0.0.1, as strictly as the real ones: the forge's own
// authentication header, required fields, its answer to a duplicate request
// (GitHub 422 "A pull request already exists", GitLab and Gitea 409), 403 for
// a token without rights, the limits on a title and description (GitHub 256
// and 65,536 characters, GitLab 255 and 1,048,576, Gitea 255), and each
// forge's rate-limit answers on demand (RateLimit, SecondaryRateLimit).
package forgefake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// PR is a pull request the fake holds.
type PR struct {
	Number      int
	Head, Base  string
	Title, Body string
	Draft       bool
	Open        bool
	Updates     int // PATCH/PUT calls after it was opened
	// Fork is the owner/repo the head branch lives in when it is not the
	// project itself (a request from someone's fork); "" for the project.
	Fork string
}

// Comment is a comment to serve on a request.
type Comment struct {
	ID     int64
	Author string
	Body   string
	Path   string
	Line   int
	Review bool // a review (diff) comment, else a general one
	// State makes it a review's own text (its summary, with the verdict):
	// GitHub APPROVED, CHANGES_REQUESTED or COMMENTED; Gitea APPROVED,
	// REQUEST_CHANGES or COMMENT. GitLab has no reviews: it is a note there.
	State string
	// Created is when it was written; AddComment sets it (a second after
	// the previous comment) when it is zero.
	Created time.Time
}

// commentEpoch is the time of the first comment AddComment dates.
var commentEpoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// AddFork opens a request from the branch head of the fork (owner/repo)
// into base, as anyone who can fork the project may, and returns its number.
func (s *Server) AddFork(fork, head, base, title string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := &PR{Number: len(s.prs) + 1, Head: head, Base: base, Title: title, Open: true, Fork: fork}
	s.prs = append(s.prs, p)
	return p.Number
}

// headRepo is the owner/repo p's head branch lives in.
func (s *Server) headRepo(p *PR) string {
	if p.Fork != "" {
		return p.Fork
	}
	return s.Project
}

// Server is one fake forge of one kind for one project.
type Server struct {
	Kind    string // "github", "gitlab", "gitea"
	Project string // owner/repo
	Token   string

	ts *httptest.Server

	mu        sync.Mutex
	prs       []*PR
	comments  map[int][]Comment
	forbidden bool
	limited   bool
	secondary bool
	noDrafts  bool
	access    map[string]int // user (GitLab: id; Gitea: login) -> GitLab access level
	notAdmin  bool
	missOnce  bool
	calls     []string
	// Issues (issues.go).
	issues     map[int]*Issue
	notes      map[int][]Comment // GitLab issues' notes
	commentSeq int
	hook       hooks
}

// New starts a fake forge of kind for project, accepting token.
func New(tb testing.TB, kind, project, token string) *Server {
	s := &Server{Kind: kind, Project: project, Token: token, comments: map[int][]Comment{}}
	s.ts = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.ts.Close)
	return s
}

// APIURL is the REST base to configure (as api_url).
func (s *Server) APIURL() string {
	switch s.Kind {
	case "gitlab":
		return s.ts.URL + "/api/v4"
	case "gitea":
		return s.ts.URL + "/api/v1"
	}
	return s.ts.URL + "/api/v3"
}

// Forbid makes every call answer 403 (a token without rights).
func (s *Server) Forbid(on bool) { s.mu.Lock(); s.forbidden = on; s.mu.Unlock() }

// RateLimitReset is when the fake's rate limit window ends, in the headers
// that say so: a minute after the call.
const RateLimitReset = 60

// RateLimit makes every call answer the forge's rate-limit response as it
// is sent: GitHub's primary limit is a 403 whose X-RateLimit-Remaining is 0
// and X-RateLimit-Reset the epoch second the window ends (no Retry-After);
// GitLab's is a 429 with Retry-After and RateLimit-* headers and a plain
// "Retry later"; Gitea has none of its own, so the fake answers as the proxy
// in front of it would, a 429 with Retry-After.
func (s *Server) RateLimit(on bool) { s.mu.Lock(); s.limited = on; s.mu.Unlock() }

// SecondaryRateLimit makes every call answer GitHub's secondary rate limit
// (too many requests at once, or too much content created): a 403 with
// Retry-After while X-RateLimit-Remaining is not 0.
func (s *Server) SecondaryRateLimit(on bool) { s.mu.Lock(); s.secondary = on; s.mu.Unlock() }

// MissNextList makes the next listing of requests come back empty, as if
// the request were opened between the client's look and its create.
func (s *Server) MissNextList() { s.mu.Lock(); s.missOnce = true; s.mu.Unlock() }

// NoDrafts makes GitHub refuse to open a draft, as it does for a private
// repository on a plan without draft pull requests (422).
func (s *Server) NoDrafts(on bool) { s.mu.Lock(); s.noDrafts = on; s.mu.Unlock() }

// SetAccess gives user (GitLab: the numeric id; Gitea: the login) access
// to the project at GitLab's levels: 10 guest, 20 reporter, 30 developer,
// 40 maintainer, 50 owner. Gitea shows them as its permissions (read below
// 30, write, admin from 40) and its collaborators.
func (s *Server) SetAccess(user string, level int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.access == nil {
		s.access = map[string]int{}
	}
	s.access[user] = level
}

// TokenNotAdmin makes Gitea answer 403 when the token asks for another
// user's permission, as it does to a token without admin rights on the
// repository (collaborators may ask for their own only).
func (s *Server) TokenNotAdmin(on bool) { s.mu.Lock(); s.notAdmin = on; s.mu.Unlock() }

// Rename sets request number's title, as a person does on the forge.
func (s *Server) Rename(number int, title string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.pull(number); p != nil {
		p.Title = title
	}
}

// PRs returns a copy of the requests.
func (s *Server) PRs() []PR {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PR, len(s.prs))
	for i, p := range s.prs {
		out[i] = *p
	}
	return out
}

// Calls lists "METHOD path" of every call so far.
func (s *Server) Calls() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.calls...)
}

// AddComment adds a comment to request number.
func (s *Server) AddComment(number int, c Comment) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Created.IsZero() {
		n := 0
		for _, cs := range s.comments {
			n += len(cs)
		}
		c.Created = commentEpoch.Add(time.Duration(n) * time.Second)
	}
	s.comments[number] = append(s.comments[number], c)
}

func (s *Server) authorized(r *http.Request) bool {
	switch s.Kind {
	case "gitlab":
		return r.Header.Get("PRIVATE-TOKEN") == s.Token || r.Header.Get("Authorization") == "Bearer "+s.Token
	case "gitea":
		return r.Header.Get("Authorization") == "token "+s.Token
	}
	a := r.Header.Get("Authorization")
	return a == "Bearer "+s.Token || a == "token "+s.Token
}

// rateLimited answers the forge's rate-limit response (see RateLimit).
func (s *Server) rateLimited(w http.ResponseWriter) {
	h := w.Header()
	reset := strconv.FormatInt(time.Now().Add(RateLimitReset*time.Second).Unix(), 10)
	switch {
	case s.Kind == "gitlab":
		h.Set("Retry-After", strconv.Itoa(RateLimitReset))
		h.Set("RateLimit-Limit", "600")
		h.Set("RateLimit-Observed", "601")
		h.Set("RateLimit-Remaining", "0")
		h.Set("RateLimit-Reset", reset)
		h.Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte("Retry later\n"))
	case s.Kind == "gitea":
		h.Set("Retry-After", strconv.Itoa(RateLimitReset))
		h.Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte("Too Many Requests\n"))
	case s.secondary:
		h.Set("Retry-After", strconv.Itoa(RateLimitReset))
		h.Set("X-RateLimit-Limit", "5000")
		h.Set("X-RateLimit-Remaining", "4321")
		h.Set("X-RateLimit-Reset", reset)
		writeJSON(w, http.StatusForbidden, map[string]any{
			"message":           "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
		})
	default:
		h.Set("X-RateLimit-Limit", "5000")
		h.Set("X-RateLimit-Remaining", "0")
		h.Set("X-RateLimit-Used", "5000")
		h.Set("X-RateLimit-Reset", reset)
		h.Set("X-RateLimit-Resource", "core")
		writeJSON(w, http.StatusForbidden, map[string]any{
			"message":           "API rate limit exceeded for user ID 1.",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
		})
	}
}

// Page sizes of the lists the fake pages as its forge does: the default
// and the largest a client may ask for (GitHub per_page 30/100, GitLab
// per_page 20/100, Gitea limit 30/50).
var pageSizes = map[string][2]int{"github": {30, 100}, "gitlab": {20, 100}, "gitea": {30, 50}}

// writePage answers one page of items as the forge does: page (from 1)
// and its size from the query (per_page; Gitea: limit), a Link header
// naming the next and last pages, and GitLab's X-Next-Page and X-Total.
func (s *Server) writePage(w http.ResponseWriter, r *http.Request, items []map[string]any) {
	sizeKey := "per_page"
	if s.Kind == "gitea" {
		sizeKey = "limit"
	}
	q := r.URL.Query()
	size := pageSizes[s.Kind][0]
	if n, err := strconv.Atoi(q.Get(sizeKey)); err == nil && n > 0 {
		size = min(n, pageSizes[s.Kind][1])
	}
	page := 1
	if n, err := strconv.Atoi(q.Get("page")); err == nil && n > 0 {
		page = n
	}
	last := max(1, (len(items)+size-1)/size)
	link := func(p int) string {
		q.Set("page", strconv.Itoa(p))
		q.Set(sizeKey, strconv.Itoa(size))
		return "<http://" + r.Host + r.URL.EscapedPath() + "?" + q.Encode() + ">"
	}
	var links []string
	if page < last {
		links = append(links, link(page+1)+`; rel="next"`, link(last)+`; rel="last"`)
		if s.Kind == "gitlab" {
			w.Header().Set("X-Next-Page", strconv.Itoa(page+1))
		}
	}
	if page > 1 {
		links = append(links, link(1)+`; rel="first"`, link(page-1)+`; rel="prev"`)
	}
	if len(links) > 0 {
		w.Header().Set("Link", strings.Join(links, ", "))
	}
	switch s.Kind {
	case "gitlab":
		w.Header().Set("X-Total", strconv.Itoa(len(items)))
	case "gitea":
		w.Header().Set("X-Total-Count", strconv.Itoa(len(items)))
	}
	from, to := min((page-1)*size, len(items)), min(page*size, len(items))
	out := items[from:to]
	if out == nil {
		out = []map[string]any{}
	}
	writeJSON(w, http.StatusOK, out)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, r.Method+" "+r.URL.Path)
	if !s.authorized(r) {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Bad credentials"})
		return
	}
	if s.limited || s.secondary {
		s.rateLimited(w)
		return
	}
	if s.forbidden {
		writeJSON(w, http.StatusForbidden, map[string]any{"message": "Resource not accessible by integration"})
		return
	}
	var body map[string]any
	if r.Body != nil && (r.Method == "POST" || r.Method == "PATCH" || r.Method == "PUT") {
		if r.Header.Get("Content-Type") != "application/json" {
			writeJSON(w, http.StatusUnsupportedMediaType, map[string]any{"message": "JSON body expected"})
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": "Problems parsing JSON"})
			return
		}
	}
	switch s.Kind {
	case "gitlab":
		s.serveGitLab(w, r, body)
	default:
		s.serveGitHubLike(w, r, body)
	}
}

func str(m map[string]any, k string) string { v, _ := m[k].(string); return v }

func (s *Server) pull(n int) *PR {
	for _, p := range s.prs {
		if p.Number == n {
			return p
		}
	}
	return nil
}

// serveGitHubLike serves GitHub and Gitea, whose pull routes match.
func (s *Server) serveGitHubLike(w http.ResponseWriter, r *http.Request, body map[string]any) {
	prefix := "/api/v3/repos/" + s.Project
	if s.Kind == "gitea" {
		prefix = "/api/v1/repos/" + s.Project
	}
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
		return
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	if s.serveIssues(w, r, parts, body) {
		return
	}
	owner, _, _ := strings.Cut(s.Project, "/")
	headOwner := func(p *PR) string { o, _, _ := strings.Cut(s.headRepo(p), "/"); return o }
	view := func(p *PR) map[string]any {
		v := map[string]any{"number": p.Number, "html_url": fmt.Sprintf("https://forge.test/%s/pull/%d", s.Project, p.Number),
			"title": p.Title, "body": p.Body, "state": map[bool]string{true: "open", false: "closed"}[p.Open],
			"head": map[string]any{"ref": p.Head, "label": headOwner(p) + ":" + p.Head, "repo": map[string]any{"full_name": s.headRepo(p)}},
			"base": map[string]any{"ref": p.Base, "repo": map[string]any{"full_name": s.Project}}}
		if s.Kind == "github" {
			v["draft"] = p.Draft
		}
		return v
	}
	switch {
	case len(parts) == 1 && parts[0] == "pulls" && r.Method == "GET":
		q := r.URL.Query()
		var out []map[string]any
		for _, p := range s.prs {
			if s.missOnce {
				break
			}
			if !p.Open {
				continue
			}
			if s.Kind == "github" && (q.Get("head") != "" && q.Get("head") != headOwner(p)+":"+p.Head || q.Get("base") != "" && q.Get("base") != p.Base) {
				continue
			}
			out = append(out, view(p))
		}
		s.missOnce = false
		s.writePage(w, r, out)
	case len(parts) == 1 && parts[0] == "pulls" && r.Method == "POST":
		head, base, title := str(body, "head"), str(body, "base"), str(body, "title")
		if head == "" || base == "" || title == "" {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": []map[string]any{{"message": "head, base and title are required"}}})
			return
		}
		if s.refuseTooLong(w, body, "title", "body") {
			return
		}
		for _, p := range s.prs {
			if p.Open && p.Fork == "" && p.Head == head && p.Base == base {
				if s.Kind == "gitea" {
					writeJSON(w, http.StatusConflict, map[string]any{"message": "pull request already exists for these targets"})
				} else {
					writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": []map[string]any{
						{"resource": "PullRequest", "code": "custom", "message": "A pull request already exists for " + owner + ":" + head + "."}},
						"documentation_url": "https://docs.github.com/rest/pulls/pulls#create-a-pull-request"})
				}
				return
			}
		}
		draft, _ := body["draft"].(bool)
		if draft && s.noDrafts && s.Kind == "github" {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": []map[string]any{
				{"resource": "PullRequest", "code": "custom", "message": "Draft pull requests are not supported in this repository."}}})
			return
		}
		p := &PR{Number: len(s.prs) + 1, Head: head, Base: base, Title: title, Body: str(body, "body"), Draft: draft, Open: true}
		if s.Kind == "gitea" {
			p.Draft = strings.HasPrefix(title, "WIP:")
		}
		s.prs = append(s.prs, p)
		writeJSON(w, http.StatusCreated, view(p))
	case len(parts) == 2 && parts[0] == "pulls" && r.Method == "GET":
		n, _ := strconv.Atoi(parts[1])
		if p := s.pull(n); p != nil {
			writeJSON(w, http.StatusOK, view(p))
		} else {
			writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
		}
	case len(parts) == 2 && parts[0] == "pulls" && r.Method == "PATCH":
		n, _ := strconv.Atoi(parts[1])
		p := s.pull(n)
		if p == nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
			return
		}
		if s.refuseTooLong(w, body, "title", "body") {
			return
		}
		if t := str(body, "title"); t != "" {
			p.Title = t
		}
		if b, ok := body["body"].(string); ok {
			p.Body = b
		}
		p.Updates++
		writeJSON(w, http.StatusOK, view(p))
	case len(parts) == 3 && parts[0] == "pulls" && parts[2] == "comments" && r.Method == "GET" && s.Kind == "github":
		n, _ := strconv.Atoi(parts[1])
		s.writePage(w, r, s.commentList(n, true))
	case len(parts) == 3 && parts[0] == "issues" && parts[2] == "comments" && r.Method == "GET":
		n, _ := strconv.Atoi(parts[1])
		if s.Kind == "gitea" {
			writeJSON(w, http.StatusOK, s.commentList(n, false)) // Gitea does not page these
			return
		}
		s.writePage(w, r, s.commentList(n, false))
	case len(parts) == 3 && parts[0] == "collaborators" && parts[2] == "permission" && r.Method == "GET" && s.Kind == "gitea":
		if s.notAdmin {
			writeJSON(w, http.StatusForbidden, map[string]any{"message": "Only admins can query all permissions, repo admins can query all repo permissions, collaborators can query only their own"})
			return
		}
		level, ok := s.access[parts[1]]
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]any{"message": "user does not exist"})
			return
		}
		perm := "read"
		switch {
		case level >= 40:
			perm = "admin"
		case level >= 30:
			perm = "write"
		}
		writeJSON(w, http.StatusOK, map[string]any{"permission": perm, "role_name": perm, "user": map[string]any{"login": parts[1]}})
	case len(parts) == 2 && parts[0] == "collaborators" && r.Method == "GET" && s.Kind == "gitea":
		if _, ok := s.access[parts[1]]; !ok {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case len(parts) == 3 && parts[0] == "pulls" && parts[2] == "reviews" && r.Method == "GET":
		n, _ := strconv.Atoi(parts[1])
		s.writePage(w, r, s.reviewList(n))
	case len(parts) == 5 && parts[0] == "pulls" && parts[2] == "reviews" && parts[4] == "comments" && r.Method == "GET" && s.Kind == "gitea":
		n, _ := strconv.Atoi(parts[1])
		if parts[3] != "1" {
			writeJSON(w, http.StatusOK, []map[string]any{}) // a review of a summary only
			return
		}
		writeJSON(w, http.StatusOK, s.commentList(n, true))
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
	}
}

// reviewList is a request's reviews: on GitHub those with a State; on
// Gitea also review 1, which holds the line comments, each with how many
// line comments it holds (comments_count).
func (s *Server) reviewList(n int) []map[string]any {
	out := []map[string]any{}
	if s.Kind == "gitea" {
		out = append(out, map[string]any{"id": 1, "user": map[string]any{"login": "reviewer"}, "body": "", "state": "COMMENT",
			"submitted_at": commentEpoch.Format(time.RFC3339), "html_url": "https://forge.test/r/1", "comments_count": len(s.commentList(n, true))})
	}
	for _, c := range s.comments[n] {
		if c.State == "" {
			continue
		}
		r := map[string]any{"id": c.ID, "user": map[string]any{"login": c.Author}, "body": c.Body, "state": c.State,
			"submitted_at": c.Created.Format(time.RFC3339), "html_url": fmt.Sprintf("https://forge.test/r/%d", c.ID)}
		if s.Kind == "gitea" {
			r["comments_count"] = 0 // its text only
		}
		out = append(out, r)
	}
	return out
}

func (s *Server) commentList(n int, review bool) []map[string]any {
	out := []map[string]any{}
	for _, c := range s.comments[n] {
		if c.Review != review || c.State != "" {
			continue
		}
		m := map[string]any{"id": c.ID, "user": map[string]any{"login": c.Author}, "body": c.Body, "html_url": fmt.Sprintf("https://forge.test/c/%d", c.ID),
			"created_at": c.Created.Format(time.RFC3339)}
		if review {
			m["path"], m["line"], m["position"], m["diff_hunk"] = c.Path, c.Line, c.Line, "@@ -1 +1 @@"
		}
		out = append(out, m)
	}
	return out
}

func (s *Server) serveGitLab(w http.ResponseWriter, r *http.Request, body map[string]any) {
	// The project is addressed by its URL-encoded path.
	prefix := "/api/v4/projects/" + url.PathEscape(s.Project)
	raw := r.URL.EscapedPath()
	rest, ok := strings.CutPrefix(raw, prefix)
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Project Not Found"})
		return
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	if s.serveIssues(w, r, parts, body) {
		return
	}
	view := func(p *PR) map[string]any {
		return map[string]any{"iid": p.Number, "web_url": fmt.Sprintf("https://forge.test/%s/-/merge_requests/%d", s.Project, p.Number),
			"title": p.Title, "description": p.Body, "draft": p.Draft, "state": "opened", "source_branch": p.Head, "target_branch": p.Base,
			"source_project_id": map[bool]int{false: 1, true: 2}[p.Fork != ""], "target_project_id": 1}
	}
	switch {
	case len(parts) == 1 && parts[0] == "merge_requests" && r.Method == "GET":
		q := r.URL.Query()
		out := []map[string]any{}
		for _, p := range s.prs {
			if s.missOnce {
				break
			}
			if p.Open && (q.Get("source_branch") == "" || q.Get("source_branch") == p.Head) && (q.Get("target_branch") == "" || q.Get("target_branch") == p.Base) {
				out = append(out, view(p))
			}
		}
		s.missOnce = false
		s.writePage(w, r, out)
	case len(parts) == 1 && parts[0] == "merge_requests" && r.Method == "POST":
		head, base, title := str(body, "source_branch"), str(body, "target_branch"), str(body, "title")
		if head == "" || base == "" || title == "" {
			writeJSON(w, http.StatusBadRequest, map[string]any{"message": "source_branch, target_branch and title are required"})
			return
		}
		if s.refuseTooLong(w, body, "title", "description") {
			return
		}
		for _, p := range s.prs {
			if p.Open && p.Fork == "" && p.Head == head {
				writeJSON(w, http.StatusConflict, map[string]any{"message": []string{fmt.Sprintf("Another open merge request already exists for this source branch: !%d", p.Number)}})
				return
			}
		}
		p := &PR{Number: len(s.prs) + 1, Head: head, Base: base, Title: title, Body: str(body, "description"), Draft: strings.HasPrefix(title, "Draft:"), Open: true}
		s.prs = append(s.prs, p)
		writeJSON(w, http.StatusCreated, view(p))
	case len(parts) == 2 && parts[0] == "merge_requests" && r.Method == "PUT":
		n, _ := strconv.Atoi(parts[1])
		p := s.pull(n)
		if p == nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Not found"})
			return
		}
		if s.refuseTooLong(w, body, "title", "description") {
			return
		}
		if d, ok := body["description"].(string); ok {
			p.Body = d
		}
		p.Updates++
		writeJSON(w, http.StatusOK, view(p))
	case len(parts) == 3 && parts[0] == "members" && parts[1] == "all" && r.Method == "GET":
		level, ok := s.access[parts[2]]
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Not found"})
			return
		}
		id, _ := strconv.Atoi(parts[2])
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "username": "user" + parts[2], "access_level": level, "state": "active"})
	case len(parts) == 3 && parts[0] == "merge_requests" && parts[2] == "notes" && r.Method == "GET":
		n, _ := strconv.Atoi(parts[1])
		out := []map[string]any{{"id": 1, "body": "added 1 commit", "system": true, "author": map[string]any{"username": "bot"}}}
		for _, c := range s.comments[n] {
			m := map[string]any{"id": c.ID, "body": c.Body, "system": false, "author": map[string]any{"username": c.Author},
				"created_at": c.Created.Format("2006-01-02T15:04:05.000Z")}
			if c.Review && c.State == "" {
				m["position"] = map[string]any{"new_path": c.Path, "new_line": c.Line}
			}
			out = append(out, m)
		}
		s.writePage(w, r, out)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "404 Not Found"})
	}
}

// Length limits of a request's title and description, in characters, per
// forge: GitHub's 256 and 65,536, GitLab's 255 and 1,048,576, Gitea's 255
// (its description has none).
var (
	maxTitle = map[string]int{"github": 256, "gitlab": 255, "gitea": 255}
	maxBody  = map[string]int{"github": 65536, "gitlab": 1 << 20}
)

// refuseTooLong answers the forge's validation error, and reports true, when
// body's title or description field (named titleKey and bodyKey) is longer
// than the forge takes.
func (s *Server) refuseTooLong(w http.ResponseWriter, body map[string]any, titleKey, bodyKey string) bool {
	field, limit := "", 0
	switch {
	case utf8.RuneCountInString(str(body, titleKey)) > maxTitle[s.Kind]:
		field, limit = titleKey, maxTitle[s.Kind]
	case maxBody[s.Kind] > 0 && utf8.RuneCountInString(str(body, bodyKey)) > maxBody[s.Kind]:
		field, limit = bodyKey, maxBody[s.Kind]
	default:
		return false
	}
	msg := fmt.Sprintf("is too long (maximum is %d characters)", limit)
	switch s.Kind {
	case "gitlab":
		writeJSON(w, http.StatusBadRequest, map[string]any{"message": map[string]any{field: []string{msg}}})
	case "gitea":
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "[" + strings.ToUpper(field[:1]) + field[1:] + "]: MaxSize"})
	default:
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": []map[string]any{
			{"resource": "PullRequest", "code": "custom", "field": field, "message": field + " " + msg},
		}})
	}
	return true
}
