package bridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/forge"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/workspace"
)

// PullRequests is how a repository's threads get pull requests.
type PullRequests struct {
	// Client reaches the repository's forge; nil when they are off for a
	// reason the thread is told once (Off).
	Client *forge.Client
	// Draft opens them as drafts.
	Draft bool
	// Off says why there are none, for the thread ("" to say nothing).
	Off string
}

// pullRequestOf returns the repository's settings, or nil when it has none
// (a local remote, or pull_requests: off).
func (t *thread) pullRequestOf() *PullRequests {
	if t.b.cfg.PullRequests == nil {
		return nil
	}
	return t.b.cfg.PullRequests[t.rec.Repo]
}

// syncPullRequest opens the thread's pull request at its first push and
// updates its description at later ones. It returns the line for the push
// notice ("" when there is nothing to say). The branch is pushed by then:
// the thread's status message gets Diff and the pull request's button.
func (t *thread) syncPullRequest(ctx context.Context, request string) string {
	return t.prDone(t.prWorkOf().sync(ctx, request))
}

// prWork is what syncing the thread's pull request needs of it, taken on the
// owner, so that !pr can do the work off it.
type prWork struct {
	pr        *PullRequests // nil: the repository has none
	ws        *workspace.Workspace
	repo      string
	requester string                       // named in the description ("" for no one)
	link      func(context.Context) string // the thread's link (thread.link: no owner state)
	platform  string
	log       *slog.Logger
	// issue is the forge issue the thread works on (nil: none), which its
	// pull request closes and links.
	issue *issueWork
}

// issueWork is what a pull request does for the issue its thread works on.
type issueWork struct {
	ref    issueRef
	client *forge.Client
}

// prResult is what a sync found, for the owner to act on (prDone).
type prResult struct {
	line string // for the thread ("" for nothing)
	url  string // the pull request's ("" without one)
	prs  bool   // the repository has pull requests
	off  string // why it gets none, told once ("" for nothing)
}

// prWorkOf takes what a sync of the pull request needs.
func (t *thread) prWorkOf() prWork {
	w := prWork{pr: t.pullRequestOf(), ws: t.ws, repo: t.rec.Repo, link: t.link, platform: platformTitle(t.ref.Platform), log: t.log, issue: t.issueWork()}
	if a := t.requester; a != nil && a.ID != forgeAuthorID {
		w.requester = a.Name // a forge's webhook asked for the last run: no one to name
	}
	return w
}

// prDone acts on a sync's result on the owner: the buttons, and the note of
// why there is no pull request, said once. It returns the line to tell.
func (t *thread) prDone(res prResult) string {
	t.offerPushed(res.url, res.prs)
	if res.off != "" {
		return t.prNoteOnce(res.off)
	}
	return res.line
}

// sync opens or updates the pull request.
func (w prWork) sync(ctx context.Context, request string) prResult {
	pr := w.pr
	if pr == nil || w.ws == nil {
		return prResult{prs: pr != nil && pr.Client != nil}
	}
	if pr.Client == nil {
		return prResult{off: pr.Off}
	}
	subjects, err := w.ws.Subjects(ctx)
	if err != nil {
		w.log.Warn("listing the branch's commits for the pull request", "err", err)
	}
	title := firstLine(request)
	if len(subjects) > 0 {
		title = firstLine(subjects[0])
	}
	res, err := pr.Client.Ensure(ctx, forge.Request{
		Head: w.ws.Branch(), Base: w.ws.DefaultBranch(),
		Title: title, Body: w.body(ctx, subjects), Draft: pr.Draft,
	})
	if err != nil {
		var fe *forge.Error
		if errors.As(err, &fe) && fe.Refused {
			return prResult{prs: true, off: fmt.Sprintf("the forge does not let the bot open pull requests for `%s` (%s)", w.repo, fe.Message)}
		}
		w.log.Warn("pull request", "err", err)
		return prResult{prs: true, line: "⚠️ The pull request could not be opened or updated: " + err.Error() + ". I'll try again after the next push, or say `!pr`."}
	}
	verb := "Updated"
	if res.Created {
		verb = "Opened"
		if res.Draft {
			verb = "Opened draft"
		}
		w.linkIssue(ctx, pr.Client.Kind(), res)
	}
	return prResult{prs: true, url: res.URL, line: fmt.Sprintf("🔀 %s [%s](%s)", verb, prName(pr.Client.Kind(), res.Number), res.URL)}
}

// prName is how the forge calls its request number n: GitLab's are merge
// requests, !n.
func prName(kind string, n int) string {
	if kind == forge.GitLab {
		return fmt.Sprintf("merge request !%d", n)
	}
	return fmt.Sprintf("pull request #%d", n)
}

// prNoteOnce tells the thread, once, why it gets no pull request.
func (t *thread) prNoteOnce(why string) string {
	if why == "" || t.prNoted {
		return ""
	}
	t.prNoted = true
	return "ℹ️ No pull request: " + why + ". The branch is pushed; open one from the compare link."
}

// body is the pull request's description: where it comes from, what the
// branch's runs were asked and which files they changed.
func (w prWork) body(ctx context.Context, subjects []string) string {
	files, err := w.ws.BranchFiles(ctx)
	if err != nil {
		w.log.Warn("listing the branch's files for the pull request", "err", err)
	}
	body := prDescription(w.platform, strings.TrimPrefix(w.link(ctx), "Thread: "), w.requester, subjects, files)
	if w.issue != nil {
		if line := closesLine(w.pr.Client.Kind(), w.issue.ref); line != "" {
			body += "\n" + line + "\n"
		}
	}
	return body
}

// prDescription writes body. The commit subjects are the model's words and
// the name is the person's choice: an @ in them does not mention anyone on
// the forge (a zero-width space follows it), or a commit subject could ping
// any user or team there. File names are the model's too: each is one code
// span on one line.
func prDescription(platform, link, requester string, subjects []string, files []workspace.FileStat) string {
	const tail = "Every commit is the agent's work in that thread; reply there (or review here and say `!review` in the thread) to change it.\n"
	fileList := prFiles(files)
	var b strings.Builder
	fmt.Fprintf(&b, "Opened by threadsmith from a %s thread: %s\n\n", platform, link)
	if requester != "" {
		fmt.Fprintf(&b, "Requested by %s.\n\n", noMentions(firstLine(requester)))
	}
	if len(subjects) > 0 {
		b.WriteString("## What was asked and done\n\n")
		for i, s := range subjects {
			line := "- " + noMentions(firstLine(s)) + "\n"
			if b.Len()+len(line)+len(fileList)+len(tail)+64 > maxPRBody {
				fmt.Fprintf(&b, "- … and %d more commit%s\n", len(subjects)-i, plural(len(subjects)-i))
				break
			}
			b.WriteString(line)
		}
		b.WriteString("\n")
	}
	b.WriteString(fileList)
	b.WriteString(tail)
	return b.String()
}

// maxPRFiles is how many changed files a description lists by name.
const maxPRFiles = 100

// prFiles is the description's list of the files the branch changed ("" for
// none): at most maxPRFiles of them, with their line counts.
func prFiles(files []workspace.FileStat) string {
	if len(files) == 0 {
		return ""
	}
	added, deleted := 0, 0
	for _, f := range files {
		added, deleted = added+f.Added, deleted+f.Deleted
	}
	var b strings.Builder
	fmt.Fprintf(&b, "## Files changed (%d, +%d −%d)\n\n", len(files), added, deleted)
	for i, f := range files {
		if i == maxPRFiles {
			fmt.Fprintf(&b, "- … and %d more file%s\n", len(files)-i, plural(len(files)-i))
			break
		}
		name := fileSpan(f.Path)
		if f.OldPath != "" {
			name = fileSpan(f.OldPath) + " → " + name
		}
		switch {
		case f.Binary:
			fmt.Fprintf(&b, "- %s (binary)\n", name)
		default:
			fmt.Fprintf(&b, "- %s (+%d −%d)\n", name, f.Added, f.Deleted)
		}
	}
	b.WriteString("\n")
	return b.String()
}

// fileSpan shows a file name as one code span on one line: no line break
// or other control character, no backtick (which would end the span), and
// at most 200 characters.
func fileSpan(name string) string {
	name = strings.Map(func(r rune) rune {
		switch {
		case r == '`':
			return '\''
		case r < ' ' || r == 0x7f || r == '\u2028' || r == '\u2029':
			return '?'
		}
		return r
	}, name)
	if utf8.RuneCountInString(name) > 200 {
		name = "…" + string([]rune(name)[utf8.RuneCountInString(name)-199:])
	}
	return "`" + name + "`"
}

// maxPRBody caps a pull request's description in bytes: GitHub refuses one
// over 65,536 characters (GitLab and Gitea allow more), and a long-lived
// thread's branch can have thousands of commits.
const maxPRBody = 60000

// noMentions keeps the forge from reading @name in s as a mention.
func noMentions(s string) string { return strings.ReplaceAll(s, "@", "@\u200b") }

// prCommand answers !pr: the thread's pull request, opened if needed (off
// the owner; prDone tells it).
func (t *thread) prCommand(c commandCall) {
	ctx := c.ctx
	pr := t.pullRequestOf()
	switch {
	case pr == nil:
		t.say("🔀 This repository has no pull requests here (a local remote, or `pull_requests: off`).")
		return
	case pr.Client == nil:
		t.say("🔀 No pull request: " + pr.Off + ".")
		return
	}
	if lp, err := t.b.cfg.Store.LastPush(ctx, t.rec.ID); err != nil || lp.Result != storage.PushOK {
		t.say("🔀 Nothing is pushed yet: the pull request opens with the first push of a run that changes files.")
		return
	}
	t.prNoted = false
	w := t.prWorkOf()
	t.background(func() msgCommandDone {
		res := w.sync(t.b.ctx, "")
		return msgCommandDone{pr: &res}
	})
}

// reviewPrompt turns `!review` into the message that gives the model the
// pull request's new comments, with where they point. handled is set (and
// the thread told) when there is nothing to give.
func (t *thread) reviewPrompt(ctx context.Context) (prompt string, handled bool) {
	pr := t.pullRequestOf()
	if pr == nil || pr.Client == nil || t.ws == nil {
		t.say("🔀 There is no pull request to read reviews from here.")
		return "", true
	}
	found, ok, err := pr.Client.Find(ctx, t.ws.Branch(), t.ws.DefaultBranch())
	if err != nil {
		t.say("⚠️ Reading the pull request failed: " + err.Error())
		return "", true
	}
	if !ok {
		t.say("🔀 This thread's branch has no open pull request yet.")
		return "", true
	}
	comments, err := pr.Client.Comments(ctx, found.Number)
	if err != nil {
		t.say("⚠️ Reading the review comments failed: " + err.Error())
		return "", true
	}
	seen := map[string]bool{}
	for _, k := range t.ws.ReviewSeen() {
		seen[k] = true
	}
	var fresh []forge.Comment
	for _, c := range comments {
		if !seen[c.Key] {
			fresh = append(fresh, c)
		}
	}
	if len(fresh) == 0 {
		t.say(fmt.Sprintf("🔀 No new review comments on [%s](%s).", prName(pr.Client.Kind(), found.Number), found.URL))
		return "", true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Review comments on the %s (%s) that you have not seen yet. Address each one: change the code where it asks for a change, answer where it asks a question, and say what you did for each.\n", prName(pr.Client.Kind(), found.Number), found.URL)
	keys := make([]string, 0, len(fresh))
	for i, c := range fresh {
		keys = append(keys, c.Key)
		fmt.Fprintf(&b, "\n%d. %s", i+1, c.Author)
		if c.State != "" {
			fmt.Fprintf(&b, " (review: %s)", c.State)
		}
		if c.Path != "" {
			fmt.Fprintf(&b, " on %s", c.Path)
			if c.Line > 0 {
				fmt.Fprintf(&b, " line %d", c.Line)
			}
		}
		b.WriteString(":\n")
		if c.Hunk != "" {
			fmt.Fprintf(&b, "```diff\n%s\n```\n", strings.TrimSpace(c.Hunk))
		}
		for _, l := range strings.Split(strings.TrimSpace(c.Body), "\n") {
			b.WriteString("> " + l + "\n")
		}
	}
	if err := t.ws.MarkReviewSeen(keys); err != nil {
		t.log.Warn("recording review comments as seen", "err", err)
	}
	return b.String(), false
}

// reviewInput is the input hook that expands `!review`. Words after it
// ("!review and keep the old name") go to the model after the comments.
func (t *thread) reviewInput(ctx context.Context, in agent.Input) (agent.InputResult, bool) {
	name, args := commandWord(in.Text)
	if name != "review" {
		return agent.InputResult{}, false
	}
	prompt, handled := t.reviewPrompt(ctx)
	if handled {
		return agent.InputResult{Action: agent.InputHandled}, true
	}
	if args != "" {
		prompt += "\nThe person who asked for this adds:\n" + args + "\n"
	}
	return agent.InputResult{Action: agent.InputTransform, Text: prompt}, true
}

// commitRequest is the request a run's commit is named after: a run of
// `!review` addressed the review comments (its commit, and the pull
// request's list of what was done, said "!review").
func (t *thread) commitRequest(request string) string {
	name, args := commandWord(request)
	if name != "review" {
		return request
	}
	what := "pull request"
	if pr := t.pullRequestOf(); pr != nil && pr.Client != nil && pr.Client.Kind() == forge.GitLab {
		what = "merge request"
	}
	subject := "Address the " + what + "'s review comments"
	if args != "" {
		subject += ": " + args
	}
	return subject
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 72 {
		cut := 72
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}
