package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"
)

// GitHub REST v3: pulls, pull review comments and issue comments.
type github struct{}

type ghPull struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
	Draft   bool   `json:"draft"`
	Head    struct {
		Ref string `json:"ref"`
	} `json:"head"`
}

func (github) repo(c *Client) string { return "/repos/" + c.cfg.Project }

func (g github) find(ctx context.Context, c *Client, head, base string) (PR, bool, error) {
	var pulls []ghPull
	q := url.Values{"head": {c.owner() + ":" + head}, "base": {base}, "state": {"open"}}
	if err := c.do(ctx, "GET", g.repo(c)+"/pulls", q, nil, &pulls); err != nil {
		return PR{}, false, err
	}
	for _, p := range pulls {
		if p.Head.Ref == head {
			return PR{Number: p.Number, URL: p.HTMLURL, Draft: p.Draft}, true, nil
		}
	}
	return PR{}, false, nil
}

func (g github) create(ctx context.Context, c *Client, r Request) (PR, error) {
	var p ghPull
	body := map[string]any{"title": r.Title, "head": r.Head, "base": r.Base, "body": r.Body, "draft": r.Draft}
	err := c.do(ctx, "POST", g.repo(c)+"/pulls", nil, body, &p)
	var fe *Error
	if r.Draft && errors.As(err, &fe) && fe.Status == http.StatusUnprocessableEntity && strings.Contains(fe.Message, "Draft pull requests are not supported") {
		// A private repository on a plan without drafts: a request ready
		// for review is the next best thing.
		body["draft"] = false
		err = c.do(ctx, "POST", g.repo(c)+"/pulls", nil, body, &p)
	}
	if err != nil {
		return PR{}, err
	}
	return PR{Number: p.Number, URL: p.HTMLURL, Draft: p.Draft}, nil
}

func (g github) update(ctx context.Context, c *Client, number int, _, body string) error {
	// The title stays as it is, as on the other forges: a person may have
	// renamed the request.
	return c.do(ctx, "PATCH", fmt.Sprintf("%s/pulls/%d", g.repo(c), number), nil, map[string]any{"body": body}, nil)
}

// ghReviewComment is one of GitHub's pull request review comments.
type ghReviewComment struct {
	ID   int64 `json:"id"`
	User struct {
		Login string `json:"login"`
	} `json:"user"`
	Body         string    `json:"body"`
	Path         string    `json:"path"`
	Line         int       `json:"line"`
	OriginalLine int       `json:"original_line"`
	DiffHunk     string    `json:"diff_hunk"`
	HTMLURL      string    `json:"html_url"`
	CreatedAt    time.Time `json:"created_at"`
}

// review is a review on GitHub and Gitea, whose own text (the summary
// written when submitting it, with the verdict) is not among its comments.
type review struct {
	ID   int64 `json:"id"`
	User struct {
		Login string `json:"login"`
	} `json:"user"`
	Body        string    `json:"body"`
	State       string    `json:"state"`
	HTMLURL     string    `json:"html_url"`
	SubmittedAt time.Time `json:"submitted_at"`
	// CommentsCount is how many line comments the review holds (Gitea;
	// nil where the forge does not say).
	CommentsCount *int `json:"comments_count"`
}

// reviewStates are the verdicts of submitted reviews (GitHub's and
// Gitea's names); a pending review is its author's draft.
var reviewStates = map[string]string{
	"CHANGES_REQUESTED": "changes requested", "REQUEST_CHANGES": "changes requested",
	"APPROVED": "approved", "COMMENTED": "commented", "COMMENT": "commented",
}

// summaries are the reviews' own texts, as comments.
func summaries(reviews []review) []Comment {
	var out []Comment
	for _, r := range reviews {
		state, ok := reviewStates[r.State]
		if !ok || strings.TrimSpace(r.Body) == "" {
			continue
		}
		out = append(out, Comment{Key: fmt.Sprintf("summary:%d", r.ID), ID: r.ID, Author: r.User.Login, Body: r.Body, URL: r.HTMLURL, State: state, Created: r.SubmittedAt})
	}
	return out
}

func (g github) comments(ctx context.Context, c *Client, number int) ([]Comment, error) {
	lines, err := getAll[ghReviewComment](ctx, c, fmt.Sprintf("%s/pulls/%d/comments", g.repo(c), number), url.Values{"per_page": {"100"}})
	if err != nil {
		return nil, err
	}
	out, err := issueComments(ctx, c, g.repo(c), number, url.Values{"per_page": {"100"}})
	if err != nil {
		return nil, err
	}
	for _, r := range lines {
		line := r.Line
		if line == 0 {
			line = r.OriginalLine
		}
		out = append(out, Comment{Key: fmt.Sprintf("review:%d", r.ID), ID: r.ID, Author: r.User.Login, Body: r.Body, Path: r.Path, Line: line, Hunk: r.DiffHunk, URL: r.HTMLURL, Created: r.CreatedAt})
	}
	reviews, err := getAll[review](ctx, c, fmt.Sprintf("%s/pulls/%d/reviews", g.repo(c), number), url.Values{"per_page": {"100"}})
	if err != nil {
		return nil, err
	}
	out = append(out, summaries(reviews)...)
	sortByID(out)
	return out, nil
}

// GitLab v4: merge requests and their notes. Drafts are marked by the
// "Draft: " title prefix, which GitLab reads as the draft flag.
type gitlab struct{}

type glMR struct {
	IID          int    `json:"iid"`
	WebURL       string `json:"web_url"`
	Draft        bool   `json:"draft"`
	SourceBranch string `json:"source_branch"`
	// A request from a fork has its source in another project.
	SourceProjectID int64 `json:"source_project_id"`
	TargetProjectID int64 `json:"target_project_id"`
}

func (gitlab) project(c *Client) string { return "/projects/" + url.PathEscape(c.cfg.Project) }

func (g gitlab) find(ctx context.Context, c *Client, head, base string) (PR, bool, error) {
	var mrs []glMR
	q := url.Values{"source_branch": {head}, "target_branch": {base}, "state": {"opened"}}
	if err := c.do(ctx, "GET", g.project(c)+"/merge_requests", q, nil, &mrs); err != nil {
		return PR{}, false, err
	}
	for _, m := range mrs {
		if m.SourceBranch == head && m.SourceProjectID == m.TargetProjectID {
			return PR{Number: m.IID, URL: m.WebURL, Draft: m.Draft}, true, nil
		}
	}
	return PR{}, false, nil
}

func (g gitlab) create(ctx context.Context, c *Client, r Request) (PR, error) {
	var m glMR
	body := map[string]any{"source_branch": r.Head, "target_branch": r.Base, "title": draftTitle(r, "Draft: "), "description": r.Body, "remove_source_branch": true}
	if err := c.do(ctx, "POST", g.project(c)+"/merge_requests", nil, body, &m); err != nil {
		return PR{}, err
	}
	return PR{Number: m.IID, URL: m.WebURL, Draft: m.Draft}, nil
}

func (g gitlab) update(ctx context.Context, c *Client, number int, _, body string) error {
	// The title stays as it is: a person may have taken it out of draft.
	return c.do(ctx, "PUT", fmt.Sprintf("%s/merge_requests/%d", g.project(c), number), nil, map[string]any{"description": body}, nil)
}

// glNote is one of GitLab's notes on a merge request.
type glNote struct {
	ID     int64  `json:"id"`
	Body   string `json:"body"`
	System bool   `json:"system"`
	Author struct {
		Username string `json:"username"`
	} `json:"author"`
	Position *struct {
		NewPath string `json:"new_path"`
		NewLine int    `json:"new_line"`
	} `json:"position"`
	CreatedAt time.Time `json:"created_at"`
}

func (g gitlab) comments(ctx context.Context, c *Client, number int) ([]Comment, error) {
	q := url.Values{"sort": {"asc"}, "order_by": {"created_at"}, "per_page": {"100"}}
	notes, err := getAll[glNote](ctx, c, fmt.Sprintf("%s/merge_requests/%d/notes", g.project(c), number), q)
	if err != nil {
		return nil, err
	}
	var out []Comment
	for _, n := range notes {
		if n.System {
			continue // "added 1 commit" and the like
		}
		cm := Comment{Key: fmt.Sprintf("note:%d", n.ID), ID: n.ID, Author: n.Author.Username, Body: n.Body, Created: n.CreatedAt}
		if n.Position != nil {
			cm.Path, cm.Line = n.Position.NewPath, n.Position.NewLine
		}
		out = append(out, cm)
	}
	sortByID(out)
	return out, nil
}

// Gitea and Forgejo v1: pulls, reviews' comments and issue comments. Drafts
// are marked by the "WIP: " title prefix.
type gitea struct{}

type gtPull struct {
	Number  int    `json:"number"`
	HTMLURL string `json:"html_url"`
	Title   string `json:"title"`
	Head    struct {
		Ref  string `json:"ref"`
		Repo struct {
			FullName string `json:"full_name"`
		} `json:"repo"`
	} `json:"head"`
	Base struct {
		Ref string `json:"ref"`
	} `json:"base"`
}

func (gitea) repo(c *Client) string { return "/repos/" + c.cfg.Project }

func (g gitea) find(ctx context.Context, c *Client, head, base string) (PR, bool, error) {
	for page := 1; page <= 10; page++ {
		var pulls []gtPull
		q := url.Values{"state": {"open"}, "limit": {"50"}, "page": {fmt.Sprint(page)}}
		if err := c.do(ctx, "GET", g.repo(c)+"/pulls", q, nil, &pulls); err != nil {
			return PR{}, false, err
		}
		for _, p := range pulls {
			// A fork's branch of the same name is someone else's request.
			if p.Head.Ref == head && p.Base.Ref == base && strings.EqualFold(p.Head.Repo.FullName, c.cfg.Project) {
				return PR{Number: p.Number, URL: p.HTMLURL, Draft: strings.HasPrefix(p.Title, "WIP:")}, true, nil
			}
		}
		if len(pulls) < 50 {
			break
		}
	}
	return PR{}, false, nil
}

func (g gitea) create(ctx context.Context, c *Client, r Request) (PR, error) {
	var p gtPull
	body := map[string]any{"head": r.Head, "base": r.Base, "title": draftTitle(r, "WIP: "), "body": r.Body}
	if err := c.do(ctx, "POST", g.repo(c)+"/pulls", nil, body, &p); err != nil {
		return PR{}, err
	}
	return PR{Number: p.Number, URL: p.HTMLURL, Draft: r.Draft}, nil
}

func (g gitea) update(ctx context.Context, c *Client, number int, _, body string) error {
	return c.do(ctx, "PATCH", fmt.Sprintf("%s/pulls/%d", g.repo(c), number), nil, map[string]any{"body": body}, nil)
}

func (g gitea) comments(ctx context.Context, c *Client, number int) ([]Comment, error) {
	reviews, err := getAll[review](ctx, c, fmt.Sprintf("%s/pulls/%d/reviews", g.repo(c), number), url.Values{"limit": {"50"}})
	if err != nil {
		return nil, err
	}
	out := summaries(reviews)
	for _, r := range reviews {
		if r.CommentsCount != nil && *r.CommentsCount == 0 {
			continue // an approval or a summary only: no call for it
		}
		var cs []struct {
			ID   int64 `json:"id"`
			User struct {
				Login string `json:"login"`
			} `json:"user"`
			Body      string    `json:"body"`
			Path      string    `json:"path"`
			Position  int       `json:"position"`
			DiffHunk  string    `json:"diff_hunk"`
			HTMLURL   string    `json:"html_url"`
			CreatedAt time.Time `json:"created_at"`
		}
		if err := c.do(ctx, "GET", fmt.Sprintf("%s/pulls/%d/reviews/%d/comments", g.repo(c), number, r.ID), nil, nil, &cs); err != nil {
			return nil, err
		}
		for _, x := range cs {
			out = append(out, Comment{Key: fmt.Sprintf("review:%d", x.ID), ID: x.ID, Author: x.User.Login, Body: x.Body, Path: x.Path, Line: x.Position, Hunk: x.DiffHunk, URL: x.HTMLURL, Created: x.CreatedAt})
		}
	}
	general, err := issueComments(ctx, c, g.repo(c), number, nil)
	if err != nil {
		return nil, err
	}
	out = append(out, general...)
	sortByID(out)
	return out, nil
}

// issueComments reads the general comments of request number, which GitHub
// and Gitea both keep on the request's issue.
func issueComments(ctx context.Context, c *Client, repo string, number int, q url.Values) ([]Comment, error) {
	type comment struct {
		ID   int64 `json:"id"`
		User struct {
			Login string `json:"login"`
		} `json:"user"`
		Body      string    `json:"body"`
		HTMLURL   string    `json:"html_url"`
		CreatedAt time.Time `json:"created_at"`
	}
	issue, err := getAll[comment](ctx, c, fmt.Sprintf("%s/issues/%d/comments", repo, number), q)
	if err != nil {
		return nil, err
	}
	out := make([]Comment, 0, len(issue))
	for _, i := range issue {
		out = append(out, Comment{Key: fmt.Sprintf("issue:%d", i.ID), ID: i.ID, Author: i.User.Login, Body: i.Body, URL: i.HTMLURL, Created: i.CreatedAt})
	}
	return out, nil
}

// draftTitle is r's title, marked as a draft by prefix when r asks for one
// (on the forges whose drafts are a title prefix).
func draftTitle(r Request, prefix string) string {
	if r.Draft && !strings.HasPrefix(r.Title, prefix) {
		return prefix + r.Title
	}
	return r.Title
}

// sortByID puts comments in the order they were written: by time where
// the forge gave it (review comments, general comments and reviews are
// numbered in separate sequences), else by number.
func sortByID(cs []Comment) {
	sort.SliceStable(cs, func(i, j int) bool {
		a, b := cs[i], cs[j]
		if !a.Created.IsZero() && !b.Created.IsZero() && !a.Created.Equal(b.Created) {
			return a.Created.Before(b.Created)
		}
		return a.ID < b.ID
	})
}

// MayWrite reports whether the forge's user may push to the project: one
// who may is a reviewer whose comment starts a run by itself (a webhook);
// anyone else's waits for someone in the thread to say `!review`. user is
// GitLab's numeric user id, GitHub's and Gitea's login. Every forge is
// asked, GitHub too: its webhooks' author_association only narrows whom the
// bot asks about (a read-only collaborator is a COLLABORATOR).
func (c *Client) MayWrite(ctx context.Context, user string) (bool, error) {
	if user == "" {
		return false, nil
	}
	var fe *Error
	switch c.cfg.Kind {
	case GitHub:
		return c.githubMayWrite(ctx, user)
	case GitLab:
		if _, err := strconv.ParseInt(user, 10, 64); err != nil {
			return false, nil
		}
		// Direct, inherited and invited members, with their access level:
		// 30 is Developer, who may push.
		var m struct {
			AccessLevel int `json:"access_level"`
		}
		err := c.do(ctx, "GET", gitlab{}.project(c)+"/members/all/"+user, nil, nil, &m)
		if errors.As(err, &fe) && fe.Status == http.StatusNotFound {
			return false, nil
		}
		return err == nil && m.AccessLevel >= 30, err
	case Gitea:
		if strings.EqualFold(user, c.owner()) {
			return true, nil // a user's own repository
		}
		repo := gitea{}.repo(c) + "/collaborators/" + url.PathEscape(user)
		var p struct {
			Permission string `json:"permission"`
		}
		err := c.do(ctx, "GET", repo+"/permission", nil, nil, &p)
		switch {
		case err == nil:
			return p.Permission == "write" || p.Permission == "admin" || p.Permission == "owner", nil
		case errors.As(err, &fe) && fe.Status == http.StatusNotFound:
			return false, nil
		case errors.As(err, &fe) && fe.Status == http.StatusForbidden:
			// Only a repository's admins may ask about others'
			// permissions: a token that is not asks whether they are a
			// collaborator (204), which does not count teams.
			err = c.do(ctx, "GET", repo, nil, nil, nil)
			if errors.As(err, &fe) && fe.Status == http.StatusNotFound {
				return false, nil
			}
			return err == nil, err
		}
		return false, err
	}
	return false, nil
}
