package forge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Issue is an issue, or a pull (merge) request read as one, with its
// discussion. Every text in it is whoever wrote it on the forge.
type Issue struct {
	Number int
	// PullRequest says it is a pull (merge) request.
	PullRequest bool
	Title       string
	Body        string
	Author      string
	URL         string
	Labels      []string
	// Head is a pull request's branch when it lives in the project itself
	// ("" for an issue, or a request from a fork).
	Head string
	// Comments are its general comments, oldest first.
	Comments []Comment
}

// maxIssueComments bounds how many comments Issue reads (its newest are
// dropped past it: the request it makes is bounded anyway).
const maxIssueComments = 200

// Issue reads issue number (a pull or merge request when pull is set) with
// its comments.
func (c *Client) Issue(ctx context.Context, number int, pull bool) (Issue, error) {
	var is Issue
	var err error
	switch c.cfg.Kind {
	case GitLab:
		is, err = glIssue(ctx, c, number, pull)
	default:
		is, err = ghIssue(ctx, c, number)
	}
	if err != nil {
		return Issue{}, err
	}
	if len(is.Comments) > maxIssueComments {
		is.Comments = is.Comments[:maxIssueComments]
	}
	return is, nil
}

// CommentIssue writes body as a new comment on issue number (a pull or
// merge request when pull is set).
func (c *Client) CommentIssue(ctx context.Context, number int, pull bool, body string) error {
	switch c.cfg.Kind {
	case GitLab:
		what := "issues"
		if pull {
			what = "merge_requests"
		}
		return c.do(ctx, "POST", fmt.Sprintf("%s/%s/%d/notes", gitlab{}.project(c), what, number), nil, map[string]any{"body": body}, nil)
	default:
		// GitHub and Gitea keep a pull request's general comments on its
		// issue.
		return c.do(ctx, "POST", fmt.Sprintf("/repos/%s/issues/%d/comments", c.cfg.Project, number), nil, map[string]any{"body": body}, nil)
	}
}

// ghIssue reads an issue on GitHub or Gitea, whose issue routes match.
func ghIssue(ctx context.Context, c *Client, number int) (Issue, error) {
	var raw struct {
		Number  int    `json:"number"`
		Title   string `json:"title"`
		Body    string `json:"body"`
		HTMLURL string `json:"html_url"`
		User    struct {
			Login string `json:"login"`
		} `json:"user"`
		Labels []struct {
			Name string `json:"name"`
		} `json:"labels"`
		PullRequest *struct{} `json:"pull_request"`
	}
	repo := "/repos/" + c.cfg.Project
	if err := c.do(ctx, "GET", fmt.Sprintf("%s/issues/%d", repo, number), nil, nil, &raw); err != nil {
		return Issue{}, err
	}
	is := Issue{Number: raw.Number, PullRequest: raw.PullRequest != nil, Title: raw.Title, Body: raw.Body, Author: raw.User.Login, URL: raw.HTMLURL}
	if is.PullRequest {
		var p gtPull // GitHub's and Gitea's pulls show their head alike
		if err := c.do(ctx, "GET", fmt.Sprintf("%s/pulls/%d", repo, number), nil, nil, &p); err != nil {
			return Issue{}, err
		}
		if strings.EqualFold(p.Head.Repo.FullName, c.cfg.Project) {
			is.Head = p.Head.Ref
		}
	}
	for _, l := range raw.Labels {
		is.Labels = append(is.Labels, l.Name)
	}
	q := url.Values{"per_page": {"100"}}
	if c.cfg.Kind == Gitea {
		q = url.Values{"limit": {"50"}}
	}
	comments, err := issueComments(ctx, c, repo, number, q)
	if err != nil {
		return Issue{}, err
	}
	sortByID(comments)
	is.Comments = comments
	return is, nil
}

// glIssue reads a GitLab issue or merge request and its notes.
func glIssue(ctx context.Context, c *Client, number int, pull bool) (Issue, error) {
	what := "issues"
	if pull {
		what = "merge_requests"
	}
	var raw struct {
		IID         int      `json:"iid"`
		Title       string   `json:"title"`
		Description string   `json:"description"`
		WebURL      string   `json:"web_url"`
		Labels      []string `json:"labels"`
		// A merge request's branch, and where it lives.
		SourceBranch    string `json:"source_branch"`
		SourceProjectID int64  `json:"source_project_id"`
		TargetProjectID int64  `json:"target_project_id"`
		Author          struct {
			Username string `json:"username"`
		} `json:"author"`
	}
	path := fmt.Sprintf("%s/%s/%d", gitlab{}.project(c), what, number)
	if err := c.do(ctx, "GET", path, nil, nil, &raw); err != nil {
		return Issue{}, err
	}
	is := Issue{Number: raw.IID, PullRequest: pull, Title: raw.Title, Body: raw.Description, Author: raw.Author.Username, URL: raw.WebURL, Labels: raw.Labels}
	if pull && raw.SourceProjectID == raw.TargetProjectID {
		is.Head = raw.SourceBranch
	}
	q := url.Values{"sort": {"asc"}, "order_by": {"created_at"}, "per_page": {"100"}}
	notes, err := getAll[glNote](ctx, c, path+"/notes", q)
	if err != nil {
		return Issue{}, err
	}
	for _, n := range notes {
		if n.System {
			continue // "added label ~bug" and the like
		}
		is.Comments = append(is.Comments, Comment{Key: fmt.Sprintf("note:%d", n.ID), ID: n.ID, Author: n.Author.Username, Body: n.Body, Created: n.CreatedAt})
	}
	sortByID(is.Comments)
	return is, nil
}

// githubMayWrite asks GitHub whether login may push to the project: its
// permission there is write or admin (maintainers count as write).
func (c *Client) githubMayWrite(ctx context.Context, login string) (bool, error) {
	var p struct {
		Permission string `json:"permission"`
	}
	err := c.do(ctx, "GET", "/repos/"+c.cfg.Project+"/collaborators/"+url.PathEscape(login)+"/permission", nil, nil, &p)
	var fe *Error
	if errors.As(err, &fe) && fe.Status == http.StatusNotFound {
		return false, nil // no such user
	}
	return err == nil && (p.Permission == "write" || p.Permission == "admin"), err
}
