package forge_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/forge"
	"github.com/threadsmith/threadsmith/internal/fakes/forgefake"
)

// An issue is read with its author, labels and comments in order, and the
// bot's comment lands on it, on every forge; a missing issue is a 404.
func TestIssueReadAndComment(t *testing.T) {
	for _, kind := range []string{forge.GitHub, forge.GitLab, forge.Gitea} {
		t.Run(kind, func(t *testing.T) {
			fake := forgefake.New(t, kind, "acme/app", "tok")
			c, err := forge.New(forge.Config{Kind: kind, APIURL: fake.APIURL(), Project: "acme/app", Token: "tok"})
			if err != nil {
				t.Fatal(err)
			}
			fake.AddIssue(forgefake.Issue{Number: 12, Title: "crash on empty input", Body: "steps: run it", Author: "7", Labels: []string{"bug"}})
			fake.CommentOn(12, false, "8", "also on Windows")
			fake.CommentOn(12, false, "9", "and here")
			is, err := c.Issue(t.Context(), 12, false)
			if err != nil {
				t.Fatal(err)
			}
			author := map[bool]string{true: "user7", false: "7"}[kind == forge.GitLab]
			if is.Number != 12 || is.Title != "crash on empty input" || is.Body != "steps: run it" || is.Author != author ||
				len(is.Labels) != 1 || is.Labels[0] != "bug" || is.PullRequest || !strings.Contains(is.URL, "/12") {
				t.Errorf("issue %+v", is)
			}
			if len(is.Comments) != 2 || is.Comments[0].Body != "also on Windows" || is.Comments[1].Body != "and here" {
				t.Errorf("comments %+v, want the two in order", is.Comments)
			}
			if err := c.CommentIssue(t.Context(), 12, false, "on it"); err != nil {
				t.Fatal(err)
			}
			cs := fake.IssueComments(12)
			if last := cs[len(cs)-1]; last.Body != "on it" || (last.Author != forgefake.BotUser && last.Author != forgefake.BotID) {
				t.Errorf("the bot's comment is %+v", last)
			}
			var fe *forge.Error
			if _, err := c.Issue(t.Context(), 13, false); !errors.As(err, &fe) || fe.Status != http.StatusNotFound {
				t.Errorf("a missing issue: %v", err)
			}
			if err := c.CommentIssue(t.Context(), 12, false, " "); !errors.As(err, &fe) || fe.Status < 400 {
				t.Errorf("an empty comment: %v, want the forge's refusal", err)
			}
		})
	}
}

// A pull (merge) request is read as an issue too, with its branch; a
// fork's branch is not the project's.
func TestIssueOfAPullRequest(t *testing.T) {
	for _, kind := range []string{forge.GitHub, forge.GitLab, forge.Gitea} {
		t.Run(kind, func(t *testing.T) {
			fake, c, pr := openedRequest(t, kind)
			fake.CommentOn(pr.Number, true, "8", "please also do y")
			is, err := c.Issue(t.Context(), pr.Number, true)
			if err != nil {
				t.Fatal(err)
			}
			if !is.PullRequest || is.Title != "t" || is.Body != "b" || is.Head != "bot/x" || len(is.Comments) != 1 || is.Comments[0].Body != "please also do y" {
				t.Errorf("request read as an issue: %+v", is)
			}
			n := fake.AddFork("mallory/app", "bot/x", "main", "from a fork")
			if is, err := c.Issue(t.Context(), n, true); err != nil || is.Head != "" {
				t.Errorf("a fork's request: %+v, %v; want no head", is, err)
			}
		})
	}
}

// GitHub is asked whether a login may push: write and admin may, read may
// not.
func TestMayWriteOnGitHub(t *testing.T) {
	fake := forgefake.New(t, forge.GitHub, "acme/app", "tok")
	c, _ := forge.New(forge.Config{Kind: forge.GitHub, APIURL: fake.APIURL(), Project: "acme/app", Token: "tok"})
	fake.SetAccess("dev", 30)
	fake.SetAccess("lead", 40)
	fake.SetAccess("triager", 20)
	for user, want := range map[string]bool{"dev": true, "lead": true, "triager": false, "stranger": false, "acme": true} {
		got, err := c.MayWrite(t.Context(), user)
		if err != nil || got != want {
			t.Errorf("MayWrite(%s) = %v, %v; want %v", user, got, err, want)
		}
	}
}
