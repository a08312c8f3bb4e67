package forgefake

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Issue is an issue the fake holds. On GitHub and Gitea issues and pull
// requests share their numbers and an issue's comments are AddComment's;
// GitLab numbers its issues apart from its merge requests.
type Issue struct {
	Number      int
	Title, Body string
	// Author is who opened it (GitLab: the user's numeric id).
	Author string
	Labels []string
}

// BotUser is the user the fake's token belongs to (GitLab: its numeric id
// is BotID): comments written through the API are theirs.
const (
	BotUser = "threadsmith-bot"
	BotID   = "99"
)

// Delivery is one webhook the fake sent.
type Delivery struct {
	Event  string // GitHub "issues", GitLab "Issue Hook", Gitea "issues", …
	Header http.Header
	Body   []byte
	// Status is the answer of the last attempt (0: not reached).
	Status int
}

// hooks is where the fake sends webhooks.
type hooks struct {
	url, secret string
	sent        []*Delivery
	inFlight    sync.WaitGroup
	seq         int
}

// SetWebhook makes the fake send its webhooks for issues and their
// comments to url, signed with secret as the forge signs them: GitHub
// X-Hub-Signature-256 (and the older X-Hub-Signature, SHA-1), Gitea
// X-Gitea-Signature (and GitHub's header), GitLab the secret itself as
// X-Gitlab-Token. Comments written through the API are delivered too, as
// the real forges do, after the call that wrote them is answered.
func (s *Server) SetWebhook(url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook.url, s.hook.secret = url, secret
}

// AddIssue opens an issue.
func (s *Server) AddIssue(is Issue) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.issues == nil {
		s.issues = map[int]*Issue{}
	}
	s.issues[is.Number] = &is
}

// IssueNow returns a copy of issue number as it is now.
func (s *Server) IssueNow(number int) (Issue, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	is, ok := s.issues[number]
	if !ok {
		return Issue{}, false
	}
	c := *is
	c.Labels = append([]string(nil), is.Labels...)
	return c, true
}

// IssueComments returns the comments of issue number (GitLab: the issue's
// notes; GitHub and Gitea: the issue's or pull request's comments).
func (s *Server) IssueComments(number int) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Comment(nil), s.issueCommentsLocked(number)...)
}

func (s *Server) issueCommentsLocked(number int) []Comment {
	if s.Kind == "gitlab" {
		return s.notes[number]
	}
	return s.comments[number]
}

// LabelIssue adds label to issue number as user does (GitLab: a numeric
// id), and delivers the forge's webhook for it; it returns the answer's
// status.
func (s *Server) LabelIssue(number int, label, user string) int {
	s.mu.Lock()
	is := s.issues[number]
	if is == nil {
		s.mu.Unlock()
		panic(fmt.Sprintf("forgefake: no issue %d", number))
	}
	previous := append([]string(nil), is.Labels...)
	is.Labels = append(is.Labels, label)
	d := s.labelHookLocked(is, label, previous, user)
	s.mu.Unlock()
	return s.deliver(d)
}

// CommentOn writes a comment on issue (or pull request) number as user
// does (GitLab: a numeric id; pull: a merge request) and delivers the
// forge's webhook for it; it returns the answer's status.
func (s *Server) CommentOn(number int, pull bool, user, body string) int {
	s.mu.Lock()
	c := s.addIssueCommentLocked(number, pull, user, body)
	d := s.commentHookLocked(number, pull, c)
	s.mu.Unlock()
	return s.deliver(d)
}

// Deliveries returns the webhooks sent so far.
func (s *Server) Deliveries() []Delivery {
	s.WaitDeliveries()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Delivery, len(s.hook.sent))
	for i, d := range s.hook.sent {
		out[i] = *d
	}
	return out
}

// Redeliver sends delivery i again, as the forge's "Redeliver" (GitHub,
// Gitea) or "Resend request" (GitLab) does: the same body and headers,
// and returns the answer's status.
func (s *Server) Redeliver(i int) int {
	s.WaitDeliveries()
	s.mu.Lock()
	d := s.hook.sent[i]
	s.mu.Unlock()
	return s.post(d)
}

// WaitDeliveries waits for the webhooks of comments written through the
// API to be answered.
func (s *Server) WaitDeliveries() { s.hook.inFlight.Wait() }

// deliver sends d (nil: no webhook is set) and returns its status.
func (s *Server) deliver(d *Delivery) int {
	if d == nil {
		return 0
	}
	return s.post(d)
}

func (s *Server) post(d *Delivery) int {
	s.mu.Lock()
	url := s.hook.url
	s.mu.Unlock()
	req, err := http.NewRequest("POST", url, bytes.NewReader(d.Body))
	if err != nil {
		return 0
	}
	req.Header = d.Header.Clone()
	resp, err := http.DefaultClient.Do(req)
	status := 0
	if err == nil {
		resp.Body.Close()
		status = resp.StatusCode
	}
	s.mu.Lock()
	d.Status = status
	s.mu.Unlock()
	return status
}

// newDeliveryLocked signs payload as the forge does and records it; nil
// when no webhook is set. event is the event's name (GitHub's
// X-GitHub-Event, Gitea's X-Gitea-Event, GitLab's X-Gitlab-Event) and
// subtype Gitea's X-Gitea-Event-Type.
func (s *Server) newDeliveryLocked(event, subtype string, payload map[string]any) *Delivery {
	if s.hook.url == "" {
		return nil
	}
	body, _ := json.Marshal(payload)
	s.hook.seq++
	id := fmt.Sprintf("%08x-0000-4000-8000-%012x", s.hook.seq, time.Now().UnixNano()&0xffffffffffff)
	h := http.Header{"Content-Type": {"application/json"}}
	mac := hmac.New(sha256.New, []byte(s.hook.secret))
	mac.Write(body)
	sum := hex.EncodeToString(mac.Sum(nil))
	switch s.Kind {
	case "gitlab":
		h.Set("X-Gitlab-Event", event)
		h.Set("X-Gitlab-Token", s.hook.secret)
		h.Set("X-Gitlab-Event-UUID", id)
		h.Set("X-Gitlab-Instance", "https://forge.test")
		h.Set("User-Agent", "GitLab/17.0.0")
	case "gitea":
		h.Set("X-Gitea-Event", event)
		h.Set("X-Gitea-Event-Type", subtype)
		h.Set("X-Gitea-Delivery", id)
		h.Set("X-Gitea-Signature", sum)
		h.Set("X-Hub-Signature-256", "sha256="+sum)
		h.Set("User-Agent", "Go-http-client/1.1")
	default:
		sha := hmac.New(sha1.New, []byte(s.hook.secret))
		sha.Write(body)
		h.Set("X-GitHub-Event", event)
		h.Set("X-GitHub-Delivery", id)
		h.Set("X-GitHub-Hook-ID", "4242")
		h.Set("X-Hub-Signature-256", "sha256="+sum)
		h.Set("X-Hub-Signature", "sha1="+hex.EncodeToString(sha.Sum(nil)))
		h.Set("User-Agent", "GitHub-Hookshot/abc1234")
	}
	d := &Delivery{Event: event, Header: h, Body: body}
	s.hook.sent = append(s.hook.sent, d)
	return d
}

// userJSON is how the forge shows user in a webhook.
func (s *Server) userJSON(user string) map[string]any {
	if s.Kind == "gitlab" {
		id, _ := strconv.Atoi(user)
		return map[string]any{"id": id, "username": "user" + user, "name": "User " + user}
	}
	return map[string]any{"login": user, "id": len(user), "type": "User", "username": user}
}

// association is GitHub's author_association of user.
func (s *Server) association(user string) string {
	owner, _, _ := strings.Cut(s.Project, "/")
	switch {
	case user == owner:
		return "OWNER"
	case s.access[user] > 0:
		// Every collaborator, whatever their role: GitHub says
		// COLLABORATOR of read-only ones too.
		return "COLLABORATOR"
	}
	return "NONE"
}

// issueJSON is how the forge shows issue (or pull request) number in a
// webhook and in its API.
func (s *Server) issueJSON(number int, pull bool) map[string]any {
	if pull {
		p := s.pull(number)
		if p == nil {
			return nil
		}
		if s.Kind == "gitlab" {
			return map[string]any{"iid": p.Number, "title": p.Title, "description": p.Body, "author": map[string]any{"username": "bot"},
				"web_url": fmt.Sprintf("https://forge.test/%s/-/merge_requests/%d", s.Project, p.Number), "labels": []string{},
				"source_branch": p.Head, "source_project_id": map[bool]int{false: 1, true: 2}[p.Fork != ""], "target_project_id": 1, "state": "opened"}
		}
		return map[string]any{"number": p.Number, "title": p.Title, "body": p.Body, "user": map[string]any{"login": BotUser},
			"html_url": fmt.Sprintf("https://forge.test/%s/pull/%d", s.Project, p.Number), "labels": []any{}, "state": "open",
			"pull_request": map[string]any{"url": "https://forge.test/pulls/" + strconv.Itoa(p.Number)}}
	}
	is := s.issues[number]
	if is == nil {
		return nil
	}
	if s.Kind == "gitlab" {
		return map[string]any{"iid": is.Number, "title": is.Title, "description": is.Body, "author": s.userJSON(is.Author),
			"web_url": fmt.Sprintf("https://forge.test/%s/-/issues/%d", s.Project, is.Number), "labels": append([]string{}, is.Labels...), "state": "opened"}
	}
	labels := []map[string]any{}
	for _, l := range is.Labels {
		labels = append(labels, map[string]any{"name": l})
	}
	v := map[string]any{"number": is.Number, "title": is.Title, "body": is.Body, "user": s.userJSON(is.Author),
		"html_url": fmt.Sprintf("https://forge.test/%s/issues/%d", s.Project, is.Number), "labels": labels, "state": "open"}
	if s.Kind == "github" {
		v["author_association"] = s.association(is.Author)
	}
	return v
}

func (s *Server) repoJSON() map[string]any {
	return map[string]any{"full_name": s.Project, "name": s.Project[strings.Index(s.Project, "/")+1:]}
}

// labelHookLocked is the webhook for label added to is by user.
func (s *Server) labelHookLocked(is *Issue, label string, previous []string, user string) *Delivery {
	switch s.Kind {
	case "gitlab":
		labels := labelObjects(is.Labels)
		attrs := s.issueJSON(is.Number, false)
		attrs["action"] = "update"
		attrs["labels"] = labels
		return s.newDeliveryLocked("Issue Hook", "", map[string]any{
			"object_kind": "issue", "event_type": "issue", "user": s.userJSON(user),
			"project":           map[string]any{"id": 1, "path_with_namespace": s.Project},
			"object_attributes": attrs, "labels": labels,
			"changes": map[string]any{"labels": map[string]any{"previous": labelObjects(previous), "current": labels}},
		})
	case "gitea":
		// Gitea says the labels changed, not which one was added.
		return s.newDeliveryLocked("issues", "issue_label", map[string]any{
			"action": "label_updated", "number": is.Number, "issue": s.issueJSON(is.Number, false),
			"repository": s.repoJSON(), "sender": s.userJSON(user),
		})
	}
	return s.newDeliveryLocked("issues", "", map[string]any{
		"action": "labeled", "issue": s.issueJSON(is.Number, false), "label": map[string]any{"name": label},
		"repository": s.repoJSON(), "sender": s.userJSON(user),
	})
}

// addIssueCommentLocked writes a comment on issue (or request) number.
func (s *Server) addIssueCommentLocked(number int, pull bool, user, body string) Comment {
	n := 0
	for _, cs := range s.comments {
		n += len(cs)
	}
	for _, cs := range s.notes {
		n += len(cs)
	}
	s.commentSeq++
	c := Comment{ID: int64(1000 + s.commentSeq), Author: user, Body: body, Created: commentEpoch.Add(time.Duration(n) * time.Second)}
	if s.Kind == "gitlab" && !pull {
		if s.notes == nil {
			s.notes = map[int][]Comment{}
		}
		s.notes[number] = append(s.notes[number], c)
	} else {
		s.comments[number] = append(s.comments[number], c)
	}
	return c
}

// commentHookLocked is the webhook for comment c on issue (or request)
// number.
func (s *Server) commentHookLocked(number int, pull bool, c Comment) *Delivery {
	switch s.Kind {
	case "gitlab":
		payload := map[string]any{
			"object_kind": "note", "event_type": "note", "user": s.userJSON(c.Author),
			"project": map[string]any{"id": 1, "path_with_namespace": s.Project},
		}
		attrs := map[string]any{"id": c.ID, "note": c.Body, "noteable_type": "Issue", "author_id": c.Author}
		if pull {
			attrs["noteable_type"] = "MergeRequest"
			payload["merge_request"] = s.issueJSON(number, true)
		} else {
			// A webhook shows the issue's labels as objects, the API as names.
			is := s.issueJSON(number, false)
			if is != nil {
				is["labels"] = labelObjects(s.issues[number].Labels)
			}
			payload["issue"] = is
		}
		payload["object_attributes"] = attrs
		return s.newDeliveryLocked("Note Hook", "", payload)
	case "gitea":
		typ := "issue_comment"
		if pull {
			typ = "pull_request_comment"
		}
		return s.newDeliveryLocked("issue_comment", typ, map[string]any{
			"action": "created", "issue": s.issueJSON(number, pull),
			"comment":    map[string]any{"id": c.ID, "body": c.Body, "user": s.userJSON(c.Author), "html_url": fmt.Sprintf("https://forge.test/c/%d", c.ID)},
			"repository": s.repoJSON(), "sender": s.userJSON(c.Author), "is_pull": pull,
		})
	}
	return s.newDeliveryLocked("issue_comment", "", map[string]any{
		"action": "created", "issue": s.issueJSON(number, pull),
		"comment": map[string]any{"id": c.ID, "body": c.Body, "user": s.userJSON(c.Author), "author_association": s.association(c.Author),
			"html_url": fmt.Sprintf("https://forge.test/c/%d", c.ID)},
		"repository": s.repoJSON(), "sender": s.userJSON(c.Author),
	})
}

// maxCommentBody is the longest comment each forge takes, in characters
// (Gitea sets none).
var maxCommentBody = map[string]int{"github": 65536, "gitlab": 1000000}

// serveIssues answers the issue routes: an issue, its comments, a new
// comment, and GitHub's permission of a user. It reports whether the call
// was one of them. parts is the path below the project.
func (s *Server) serveIssues(w http.ResponseWriter, r *http.Request, parts []string, body map[string]any) bool {
	pull := s.Kind == "gitlab" && len(parts) >= 2 && parts[0] == "merge_requests"
	isIssue := len(parts) >= 2 && parts[0] == "issues" || pull
	switch {
	case s.Kind == "github" && len(parts) == 3 && parts[0] == "collaborators" && parts[2] == "permission" && r.Method == "GET":
		owner, _, _ := strings.Cut(s.Project, "/")
		perm := "read"
		switch level := s.access[parts[1]]; {
		case parts[1] == owner || level >= 40:
			perm = "admin"
		case level >= 30:
			perm = "write"
		}
		writeJSON(w, http.StatusOK, map[string]any{"permission": perm, "role_name": perm, "user": map[string]any{"login": parts[1]}})
		return true
	case !isIssue:
		return false
	case len(parts) == 2 && pull && r.Method != "GET":
		return false // updating a merge request: the pull routes
	}
	n, err := strconv.Atoi(parts[1])
	if err != nil {
		return false
	}
	// On GitHub and Gitea an issue's number may be a pull request's.
	asPull := pull || s.issues[n] == nil && s.Kind != "gitlab" && s.pull(n) != nil
	view := s.issueJSON(n, asPull)
	switch {
	case len(parts) == 2 && r.Method == "GET":
		if view == nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
			return true
		}
		writeJSON(w, http.StatusOK, view)
	case len(parts) == 3 && (parts[2] == "comments" || parts[2] == "notes") && r.Method == "POST":
		if view == nil {
			writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
			return true
		}
		text, ok := body["body"].(string)
		switch {
		case !ok || strings.TrimSpace(text) == "":
			if s.Kind == "gitlab" {
				writeJSON(w, http.StatusBadRequest, map[string]any{"message": "400 Bad request - body is missing"})
			} else {
				writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": []map[string]any{{"field": "body", "code": "missing_field"}}})
			}
			return true
		case maxCommentBody[s.Kind] > 0 && utf8.RuneCountInString(text) > maxCommentBody[s.Kind]:
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed", "errors": []map[string]any{{"field": "body", "message": "body is too long"}}})
			return true
		}
		user := BotUser
		if s.Kind == "gitlab" {
			user = BotID
		}
		c := s.addIssueCommentLocked(n, asPull, user, text)
		if d := s.commentHookLocked(n, asPull, c); d != nil {
			s.hook.inFlight.Add(1)
			go func() {
				defer s.hook.inFlight.Done()
				s.post(d)
			}()
		}
		writeJSON(w, http.StatusCreated, map[string]any{"id": c.ID, "body": c.Body, "user": s.userJSON(user), "author": s.userJSON(user)})
	case len(parts) == 3 && parts[2] == "comments" && r.Method == "GET" && s.Kind != "gitlab":
		return false // the pull routes list them
	case len(parts) == 3 && parts[2] == "notes" && r.Method == "GET" && !pull:
		out := []map[string]any{{"id": 1, "body": "added ~1 label", "system": true, "author": map[string]any{"username": "bot"}}}
		for _, c := range s.notes[n] {
			out = append(out, map[string]any{"id": c.ID, "body": c.Body, "system": false, "author": map[string]any{"username": "user" + c.Author},
				"created_at": c.Created.Format("2006-01-02T15:04:05.000Z")})
		}
		s.writePage(w, r, out)
	default:
		return false
	}
	return true
}

// labelObjects are labels as GitLab's webhooks show them.
func labelObjects(ls []string) []map[string]any {
	out := []map[string]any{}
	for i, l := range ls {
		out = append(out, map[string]any{"id": i + 1, "title": l})
	}
	return out
}
