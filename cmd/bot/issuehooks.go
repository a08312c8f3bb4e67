package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/threadsmith/threadsmith/bridge"
	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/forge"
)

// issueEvent is what an issue or comment webhook says, as far as threads
// care: which issue (or pull request), and either that it got the
// configured label or a comment's text.
type issueEvent struct {
	number int
	pull   bool // a pull (merge) request
	// labeled: the configured label was added (Gitea, which does not say
	// which label changed: the issue has it now).
	labeled bool
	// comment is a new comment's text and commentID its forge id (0 for a
	// label event).
	comment   string
	commentID int64
	// author is who did it, as the forge is asked about them (GitLab's
	// numeric id, GitHub's and Gitea's login); name is how they are shown.
	author, name string
	// askGitHub says the author's permission is to be asked of GitHub: a
	// label event (which carries no author_association), or a comment
	// whose author_association says its author may have write access.
	// Other GitHub authors may not push; the other forges are always asked.
	askGitHub bool
}

// parseIssueEvent reads an issue, label or comment webhook of kind's forge;
// ok is false for every other event, and for events that are not the
// repository's own issue or comment being created or labelled.
func parseIssueEvent(kind string, h http.Header, body []byte, label string) (ev issueEvent, ok bool) {
	type user struct {
		ID       int64  `json:"id"`
		Login    string `json:"login"`
		Username string `json:"username"`
	}
	type named struct {
		Name  string `json:"name"`
		Title string `json:"title"`
	}
	var p struct {
		Action string `json:"action"`
		Issue  struct {
			Number int `json:"number"`
			IID    int `json:"iid"`
			// Read apart: a shape other than the one read here (GitLab's
			// API names, its webhooks' objects) must not lose the event.
			Labels      json.RawMessage `json:"labels"`
			PullRequest json.RawMessage `json:"pull_request"`
		} `json:"issue"`
		Label   named `json:"label"`
		Comment struct {
			ID                int64  `json:"id"`
			Body              string `json:"body"`
			User              user   `json:"user"`
			AuthorAssociation string `json:"author_association"`
		} `json:"comment"`
		Sender user `json:"sender"`
		IsPull bool `json:"is_pull"`
		// GitLab.
		ObjectKind       string `json:"object_kind"`
		User             user   `json:"user"`
		ObjectAttributes struct {
			ID           int64  `json:"id"`
			IID          int    `json:"iid"`
			Note         string `json:"note"`
			NoteableType string `json:"noteable_type"`
			Action       string `json:"action"`
		} `json:"object_attributes"`
		MergeRequest struct {
			IID int `json:"iid"`
		} `json:"merge_request"`
		Changes struct {
			Labels struct {
				Previous []named `json:"previous"`
				Current  []named `json:"current"`
			} `json:"labels"`
		} `json:"changes"`
	}
	if json.Unmarshal(body, &p) != nil {
		return issueEvent{}, false
	}
	hasPull := len(p.Issue.PullRequest) > 0 && string(p.Issue.PullRequest) != "null"
	names := func(ls []named) []string {
		out := make([]string, 0, len(ls))
		for _, l := range ls {
			out = append(out, l.Name+l.Title)
		}
		return out
	}
	switch kind {
	case forge.GitLab:
		if p.User.ID == 0 {
			return issueEvent{}, false
		}
		ev = issueEvent{author: strconv.FormatInt(p.User.ID, 10), name: p.User.Username}
		switch h.Get("X-Gitlab-Event") {
		case "Issue Hook":
			if p.ObjectKind != "issue" || label == "" {
				return issueEvent{}, false
			}
			added := slices.Contains(names(p.Changes.Labels.Current), label) && !slices.Contains(names(p.Changes.Labels.Previous), label)
			ev.number, ev.labeled = p.ObjectAttributes.IID, added
			return ev, added && ev.number > 0
		case "Note Hook":
			// A note edited ("update") is not a new comment: only new ones
			// start or reach a thread, as on the other forges ("created").
			if p.ObjectKind != "note" || p.ObjectAttributes.Action == "update" {
				return issueEvent{}, false
			}
			switch p.ObjectAttributes.NoteableType {
			case "Issue":
				ev.number = p.Issue.IID
			case "MergeRequest":
				ev.number, ev.pull = p.MergeRequest.IID, true
			default:
				return issueEvent{}, false // a commit's or a snippet's
			}
			ev.comment, ev.commentID = p.ObjectAttributes.Note, p.ObjectAttributes.ID
			return ev, ev.number > 0 && ev.commentID > 0
		}
	case forge.Gitea:
		if p.Sender.Login == "" {
			return issueEvent{}, false
		}
		ev = issueEvent{number: p.Issue.Number, pull: hasPull || p.IsPull, author: p.Sender.Login, name: p.Sender.Login}
		switch h.Get("X-Gitea-Event") {
		case "issues":
			// Gitea says the labels changed, not which one was added: the
			// issue has the label now (one thread per issue keeps a second
			// change from starting another).
			var labels []named
			_ = json.Unmarshal(p.Issue.Labels, &labels)
			if p.Action != "label_updated" || label == "" || !slices.Contains(names(labels), label) {
				return issueEvent{}, false
			}
			ev.labeled = true
			return ev, ev.number > 0
		case "issue_comment":
			if p.Action != "created" {
				return issueEvent{}, false
			}
			ev.comment, ev.commentID = p.Comment.Body, p.Comment.ID
			return ev, ev.number > 0 && ev.commentID > 0
		}
	default:
		ev = issueEvent{number: p.Issue.Number, pull: hasPull}
		switch h.Get("X-GitHub-Event") {
		case "issues":
			if p.Action != "labeled" || label == "" || p.Label.Name != label || p.Sender.Login == "" {
				return issueEvent{}, false
			}
			ev.labeled, ev.author, ev.name, ev.askGitHub = true, p.Sender.Login, p.Sender.Login, true
			return ev, ev.number > 0
		case "issue_comment":
			if p.Action != "created" || p.Comment.User.Login == "" {
				return issueEvent{}, false
			}
			ev.comment, ev.commentID = p.Comment.Body, p.Comment.ID
			ev.author, ev.name = p.Comment.User.Login, p.Comment.User.Login
			ev.askGitHub = repoPeople[p.Comment.AuthorAssociation]
			return ev, ev.number > 0 && ev.commentID > 0
		}
	}
	return issueEvent{}, false
}

// commandPrefix starts a comment that asks the bot for a thread.
const commandPrefix = "/threadsmith"

// issueCommand returns the request of a `/threadsmith <request>` comment;
// ok is false for any other comment.
func issueCommand(comment string) (request string, ok bool) {
	s := strings.TrimSpace(comment)
	rest, found := strings.CutPrefix(s, commandPrefix)
	if !found || rest != "" && rest[0] != ' ' && rest[0] != '\n' && rest[0] != '\t' && rest[0] != '\r' {
		return "", false
	}
	return strings.TrimSpace(rest), true
}

// issueOpener is what a verified issue or comment webhook asks of the
// bridge.
type issueOpener interface {
	ForgeIssue(ctx context.Context, ev bridge.IssueEvent) (bridge.IssueOutcome, error)
}

// issueHook hands a verified issue, label or comment webhook to the bridge
// and returns the answer's status: 202 when taken, 204 when it is nothing
// for the bot, 503 when the forge or the store failed (the forge delivers
// it again).
func issueHook(ctx context.Context, b issueOpener, repo config.Repo, kind string, client *forge.Client, h http.Header, body []byte, log *slog.Logger) int {
	ev, ok := parseIssueEvent(kind, h, body, repo.Issues.Label)
	if !ok {
		return http.StatusNoContent
	}
	if strings.Contains(ev.comment, bridge.ForgeCommentMark) {
		return http.StatusNoContent // the bot's own comment
	}
	if client == nil {
		log.Warn("issue webhook ignored: the repository's forge has no client (token, forge)", "repo", repo.Name)
		return http.StatusNoContent
	}
	request, command := issueCommand(ev.comment)
	out, err := b.ForgeIssue(ctx, bridge.IssueEvent{
		Repo: repo.Name, Number: ev.number, Pull: ev.pull, Labeled: ev.labeled,
		Comment: ev.comment, CommentID: ev.commentID, Command: command, Request: request, Author: ev.name,
		// Only people who may push start or steer a thread: the forge is
		// asked, only when the event would do something (and on GitHub only
		// about people associated with the repository).
		MayPush: func(ctx context.Context) (bool, error) {
			if kind == forge.GitHub && !ev.askGitHub {
				return false, nil
			}
			return client.MayWrite(ctx, ev.author)
		},
	})
	if err != nil {
		log.Warn("issue webhook: handing it to the bridge failed", "repo", repo.Name, "number", ev.number, "err", err)
		return http.StatusServiceUnavailable
	}
	log.Info("issue webhook", "repo", repo.Name, "number", ev.number, "pull", ev.pull, "outcome", string(out))
	return http.StatusAccepted
}
