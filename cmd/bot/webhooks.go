package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/threadsmith/threadsmith/config"
	"github.com/threadsmith/threadsmith/forge"
)

// reviewer is what a verified review webhook asks of the bridge.
type reviewer interface {
	ForgeReview(ctx context.Context, repo, branch, delivery string) (bool, error)
}

// webhookHandler serves POST /hooks/<repo>: a forge's webhook, verified by
// the repository's webhook_secret, that says a pull request got review
// comments; the thread working on its branch gets a `!review`. With the
// repository's issues configured, issue, label and comment events go to
// issueHook. Anything not verified is 401 and does nothing; other events are
// acknowledged and ignored (forges retry failures).
func webhookHandler(cfg *config.Config, b reviewer, log *slog.Logger) http.Handler {
	type hooked struct {
		config.Repo
		kind string // the forge, whose way of signing the hook is checked
		// client asks the forge whether a comment's author may push (and
		// reads and comments on issues); nil without a token.
		client *forge.Client
	}
	repos := map[string]hooked{}
	for _, r := range cfg.Workspace.Repos {
		if r.WebhookSecret != "" {
			h := hooked{Repo: r, kind: r.Forge}
			if fc, err := forge.Resolve(r.URL, r.Forge, r.APIURL, r.Token); err == nil {
				h.kind = fc.Kind
				h.client, _ = forge.New(fc)
			}
			repos[r.Name] = h
		}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		repo, ok := repos[strings.TrimPrefix(r.URL.Path, "/hooks/")]
		if !ok || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
		if err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		kind := repo.kind
		if !verifyWebhook(kind, repo.WebhookSecret, r.Header, body) {
			log.Warn("webhook refused: bad signature", "repo", repo.Name)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		branch, delivery, author := reviewEvent(kind, r.Header, body)
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		if branch == "" {
			status := http.StatusNoContent
			if opener, ok := b.(issueOpener); ok && repo.Issues != nil {
				status = issueHook(ctx, opener, repo.Repo, kind, repo.client, r.Header, body, log)
			}
			w.WriteHeader(status)
			return
		}
		// Anyone who may comment is not anyone who may start a run:
		// only people who may push to the repository do, as the forge
		// says when asked (GitHub's author_association only narrows
		// who is asked: a read-only collaborator is a COLLABORATOR, an
		// organisation's member a MEMBER, whatever they may do here).
		if repo.client == nil {
			log.Warn("webhook ignored: without the repository's token the bot cannot tell whether the author may push", "repo", repo.Name)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		mayPush, err := repo.client.MayWrite(ctx, author)
		if err != nil {
			log.Warn("webhook: asking the forge about the comment's author failed", "repo", repo.Name, "err", err)
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		if !mayPush {
			log.Info("webhook: the comment's author may not push; it waits for !review", "repo", repo.Name, "branch", branch, "author", author)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if delivery == "" || strings.HasPrefix(delivery, "/") {
			// No id of GitLab's (reviewEvent gives none of GitHub's and
			// Gitea's): the event is what the forge signed, its body, never
			// "" (which would make every later event a duplicate of the
			// first).
			sum := sha256.Sum256(body)
			delivery = hex.EncodeToString(sum[:16])
		}
		found, err := b.ForgeReview(ctx, repo.Name, branch, delivery)
		if err != nil {
			log.Warn("webhook: handing the review to the thread failed", "repo", repo.Name, "branch", branch, "err", err)
			http.Error(w, "try again", http.StatusServiceUnavailable)
			return
		}
		log.Info("webhook: review comments", "repo", repo.Name, "branch", branch, "thread_found", found)
		if opener, ok := b.(issueOpener); ok && !found && repo.Issues != nil {
			// A comment on a request no thread works on (a GitLab merge
			// request's note) may be a `/threadsmith` command.
			if status := issueHook(ctx, opener, repo.Repo, kind, repo.client, r.Header, body, log); status == http.StatusServiceUnavailable {
				w.WriteHeader(status)
				return
			}
		}
		w.WriteHeader(http.StatusAccepted)
	})
}

// verifyWebhook checks a webhook's signature the way its forge signs:
// GitHub X-Hub-Signature-256 ("sha256=" + hex HMAC-SHA256 of the body),
// Gitea/Forgejo X-Gitea-Signature (hex HMAC-SHA256), GitLab X-Gitlab-Token
// (the secret itself).
func verifyWebhook(kind, secret string, h http.Header, body []byte) bool {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	sum := hex.EncodeToString(mac.Sum(nil))
	switch kind {
	case forge.GitLab:
		got := h.Get("X-Gitlab-Token")
		return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(secret)) == 1
	case forge.Gitea:
		got := h.Get("X-Gitea-Signature")
		if got == "" {
			got = h.Get("X-Forgejo-Signature")
		}
		return got != "" && hmac.Equal([]byte(got), []byte(sum))
	default:
		got := h.Get("X-Hub-Signature-256")
		return strings.HasPrefix(got, "sha256=") && hmac.Equal([]byte(strings.TrimPrefix(got, "sha256=")), []byte(sum))
	}
}

// repoPeople are GitHub's author associations of people who may have write
// access to the repository: its owner, its collaborators (of any role,
// read-only included) and its organisation's members. GitHub is asked
// whether they do.
var repoPeople = map[string]bool{"OWNER": true, "MEMBER": true, "COLLABORATOR": true}

// reviewEvent returns the head branch of a review-comment event, GitLab's
// id of the event and, on GitLab and Gitea, the author the forge is asked
// about (GitLab's user id, Gitea's login), or "" for every other event.
// GitHub's and Gitea's delivery headers are not ids of the event: the
// signature does not cover them, so a captured webhook replayed under a new
// one would be another event; their body identifies it. GitLab signs
// nothing (its token is the secret itself), so its event id does.
func reviewEvent(kind string, h http.Header, body []byte) (branch, delivery, author string) {
	type repo struct {
		FullName string `json:"full_name"`
	}
	var p struct {
		Action      string `json:"action"`
		PullRequest struct {
			Head struct {
				Ref  string `json:"ref"`
				Repo repo   `json:"repo"`
			} `json:"head"`
			Base struct {
				Repo repo `json:"repo"`
			} `json:"base"`
		} `json:"pull_request"`
		// GitHub says who wrote the comment (review) and how they relate
		// to the repository.
		Comment struct {
			AuthorAssociation string `json:"author_association"`
			User              struct {
				Login string `json:"login"`
			} `json:"user"`
		} `json:"comment"`
		Review struct {
			AuthorAssociation string `json:"author_association"`
			User              struct {
				Login string `json:"login"`
			} `json:"user"`
		} `json:"review"`
		ObjectKind       string `json:"object_kind"`
		ObjectAttributes struct {
			ID           int64  `json:"id"`
			NoteableType string `json:"noteable_type"`
		} `json:"object_attributes"`
		MergeRequest struct {
			SourceBranch    string `json:"source_branch"`
			SourceProjectID int64  `json:"source_project_id"`
			TargetProjectID int64  `json:"target_project_id"`
		} `json:"merge_request"`
		// Who wrote it: GitLab's user, Gitea's sender.
		User struct {
			ID int64 `json:"id"`
		} `json:"user"`
		Sender struct {
			Login string `json:"login"`
		} `json:"sender"`
	}
	if json.Unmarshal(body, &p) != nil {
		return "", "", ""
	}
	// A request from a fork is anyone's, whatever its branch is named: its
	// review is not the thread's (the forge signs it all the same).
	head, base := p.PullRequest.Head.Repo.FullName, p.PullRequest.Base.Repo.FullName
	if kind != forge.GitLab && (head == "" || !strings.EqualFold(head, base)) {
		return "", "", ""
	}
	switch kind {
	case forge.GitLab:
		if p.ObjectKind != "note" || p.ObjectAttributes.NoteableType != "MergeRequest" ||
			p.MergeRequest.SourceProjectID != p.MergeRequest.TargetProjectID || p.User.ID == 0 {
			return "", "", ""
		}
		return p.MergeRequest.SourceBranch, h.Get("X-Gitlab-Event-UUID") + "/" + strconv.FormatInt(p.ObjectAttributes.ID, 10), strconv.FormatInt(p.User.ID, 10)
	case forge.Gitea:
		if giteaReviews[giteaEventType(h)] && p.Sender.Login != "" {
			return p.PullRequest.Head.Ref, "", p.Sender.Login
		}
	default:
		switch h.Get("X-GitHub-Event") {
		case "pull_request_review_comment", "pull_request_review":
			// Anyone may comment on a public repository's pull request; only
			// people who may push start a run by doing so (a stranger's
			// comment still reaches the model when someone in the thread
			// asks for it with !review). Those GitHub does not associate
			// with the repository are not even asked about.
			author, assoc := p.Comment.User.Login, p.Comment.AuthorAssociation
			if p.Review.User.Login != "" {
				author, assoc = p.Review.User.Login, p.Review.AuthorAssociation
			}
			if (p.Action == "created" || p.Action == "submitted") && repoPeople[assoc] && author != "" {
				return p.PullRequest.Head.Ref, "", author
			}
		}
	}
	return "", "", ""
}

// giteaReviews are the event types of Gitea's (and Forgejo's) webhooks
// about a pull request's review: its X-Gitea-Event-Type. A plain comment on
// a pull request is an issue comment ("pull_request_comment" there,
// "issue_comment" as the event).
var giteaReviews = map[string]bool{
	"pull_request_review_comment":  true,
	"pull_request_review_approved": true,
	"pull_request_review_rejected": true,
}

// giteaEventType is a Gitea or Forgejo webhook's fine event type. Gitea
// sends the coarse event in X-Gitea-Event ("pull_request_comment" for a
// review comment, "pull_request_approved", "issue_comment" for any
// comment) and the fine one in X-Gitea-Event-Type; Forgejo sends both under
// its own name too.
func giteaEventType(h http.Header) string {
	if t := h.Get("X-Gitea-Event-Type"); t != "" {
		return t
	}
	return h.Get("X-Forgejo-Event-Type")
}
