package bridge

// Choosing a thread's repository in the chat. A new thread whose repository
// nothing names (no repo=, no channel mapping, no default_repo) while
// several are open in its place is stored without one; its requests are
// held, and the thread is answered with a menu of the repositories (and
// `!repo <name>` as text). The choice is the command `!repo <name>`, a click
// or typed alike: the name is held to the repositories open in the thread's
// place, and the person who asked something in the thread, or an approver
// of the repository chosen, may choose. The held requests then go on in
// order. Until the thread's branch has work of its own (a push, commits, or
// changes), `!repo <name>` moves the thread to another repository: a fresh
// worktree there, the conversation kept (each prompt names the repository).
//
// Held requests stay pending in storage, so a restart replays them into the
// new owner, which holds them again; the menu is offered once per request
// held first (a restart does not post it again, and `!repo` alone shows it
// anew). An owner holding requests is not evicted: they live in its memory
// until the choice.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	"github.com/threadsmith/threadsmith/outbox"
	"github.com/threadsmith/threadsmith/storage"
)

// errChooseRepo says a new thread's repository is chosen in the thread:
// nothing names one and several are open in its place.
var errChooseRepo = errors.New("the thread's repository is chosen in the thread")

// repoMenuID names the menu's action: a choice arrives as `!repo <name>`.
const repoMenuID = "repo"

// parentLookupTimeout bounds asking the platform for a thread's parent
// channel (a call on the owner).
const parentLookupTimeout = 10 * time.Second

// menuPrefix starts the text of every menu.
const menuPrefix = "📁 Which repository"

// repoPick is the state of choosing the thread's repository (repopick.go).
type repoPick struct {
	unchosen []*pendingInput // requests held until the thread has a repository
	menu     *outbox.Message // the menu this owner posted, while it stands
}

// holdForRepo holds a request of a thread that has no repository yet, and
// reports whether it did; the first held is answered with the menu.
func (t *thread) holdForRepo(pi *pendingInput, c inputClass) bool {
	if t.rec.Repo != "" {
		return false
	}
	if !c.startsRun {
		cmd := lookupCommand(c.name)
		if cmd == nil || cmd.answeredUnopened() || cmd.noSession != nil || len(t.unchosen) == 0 {
			return false
		}
		// A command about the session a request waits for.
		t.markInbound(pi.id, storage.InboundDelivered, "")
		t.say("📁 Your request waits for its repository: choose it in the menu above, or with `!repo <name>`.")
		return true
	}
	t.unchosen = append(t.unchosen, pi)
	if len(t.unchosen) > 1 {
		return true
	}
	// A menu posted for this request by an earlier process stands in the
	// thread already.
	first, err := t.b.cfg.Store.MarkEventProcessed(t.b.ctx, t.p.name, fmt.Sprintf("repo-menu/%d/%d", t.rec.ID, pi.id))
	if err != nil {
		t.log.Warn("recording the repository menu", "err", err)
	}
	if first || err != nil {
		t.offerRepos(t.reposHere(t.b.ctx, pi.in), menuPrefix+" should I work in?")
	}
	return true
}

// reposHere are the repositories open in the thread's place (its channel's
// mapping, see Platform.Channels), of which in is a message. Input replayed
// from storage does not carry the parent channel of a thread that is a
// channel of its own: the adapter tells it.
func (t *thread) reposHere(ctx context.Context, in chat.Inbound) []string {
	if in.DM || t.ref.Team == "" {
		return t.b.openRepos(nil)
	}
	ch := in.Parent
	if pf, ok := t.p.Adapter.(chat.ParentFinder); ok && ch == "" {
		pctx, cancel := context.WithTimeout(ctx, parentLookupTimeout)
		ch = pf.ParentChannel(pctx, t.ref)
		cancel()
	}
	if ch == "" {
		ch = t.ref.Channel
	}
	return t.b.openRepos(t.p.Channels[ch])
}

// offerRepos posts the menu of repos under question. A platform without
// menus, and repositories beyond the menu's room, get their names in the
// text.
func (t *thread) offerRepos(repos []string, question string) {
	var opts []chat.Option
	var rest []string
	room := t.p.Adapter.Limits().MaxChoices
	if _, ok := t.p.Adapter.(chat.Actioner); !ok {
		room = 0
	}
	for _, r := range repos {
		if len(opts) < room && chat.ValidChoice(r) {
			opts = append(opts, chat.Option{Value: r, Label: r})
		} else {
			rest = append(rest, "`"+r+"`")
		}
	}
	var b strings.Builder
	b.WriteString(question)
	switch {
	case len(opts) == 0:
		b.WriteString(" Choose with `!repo <name>`: " + strings.Join(rest, ", ") + ".")
	case len(rest) > 0:
		fmt.Fprintf(&b, " Choose below (the menu holds %d of %d), or with `!repo <name>` for the others: %s.", len(opts), len(repos), strings.Join(rest, ", "))
	default:
		b.WriteString(" Choose below, or with `!repo <name>`.")
	}
	b.WriteString("\nThe person who asked, or an approver of the repository, chooses.")
	if len(opts) == 0 {
		t.say(b.String())
		return
	}
	text := b.String()
	m := t.p.Outbox.Post(t.ref, text, outbox.High, func(id string, err error) {
		if err == nil && id != "" {
			t.post(msgMenuPosted{id: id, text: text})
		}
	})
	t.p.Outbox.SetActions(m, []chat.Action{{ID: repoMenuID, Label: "Choose a repository", Options: opts}}, outbox.High)
	t.menu = m
}

// menuPosted records a menu the platform took, so that the choice closes it
// after a restart too (closeMenu).
func (t *thread) menuPosted(m msgMenuPosted) {
	_, err := t.store.RecordOutbound(t.b.ctx, storage.Outbound{ThreadID: t.rec.ID, Kind: storage.OutboundNotice,
		Channel: t.ref.Channel, MessageID: m.id, Text: m.text})
	if err != nil {
		t.log.Warn("recording the repository menu", "err", err)
	}
}

// closeMenu replaces the latest menu's text with text, and takes the menu
// away: this owner's menu, else the one recorded last (posted before a
// restart). It reports whether there was one.
func (t *thread) closeMenu(ctx context.Context, text string) bool {
	if t.menu != nil {
		t.p.Outbox.Edit(t.menu, text, outbox.High)
		t.p.Outbox.SetActions(t.menu, nil, outbox.High)
		t.menu = nil
		return true
	}
	o, err := t.b.cfg.Store.LastOutbound(ctx, t.rec.ID, storage.OutboundNotice)
	if err != nil || !strings.HasPrefix(o.Text, menuPrefix) {
		return false
	}
	// An edit of a message leaves it without the menu.
	t.p.Outbox.Edit(t.p.Outbox.Adopt(t.ref, o.MessageID), text, outbox.High)
	if err := t.store.UpdateOutbound(ctx, o.ID, text); err != nil {
		t.log.Warn("recording the closed repository menu", "err", err)
	}
	return true
}

// repoCommand answers !repo: alone, the menu; with a name, the thread's
// repository chosen, or changed before the branch has work of its own.
func (t *thread) repoCommand(c commandCall) {
	ctx := c.ctx
	name := strings.TrimSpace(c.args)
	open := t.reposHere(ctx, c.in)
	if name == "" {
		if why := t.repoFixed(ctx); why != "" {
			t.say(why)
			return
		}
		if len(open) == 1 && open[0] == t.rec.Repo {
			t.say(fmt.Sprintf("📁 This thread works in `%s`, the only repository open here.", t.rec.Repo))
			return
		}
		question := menuPrefix + " should I work in?"
		if t.rec.Repo != "" {
			question = fmt.Sprintf("%s should this thread work in? (It works in `%s` now.)", menuPrefix, t.rec.Repo)
		}
		t.offerRepos(open, question)
		return
	}
	if !slices.Contains(open, name) {
		t.log.Info("refused a repository the thread may not open", "user", c.author.ID)
		shown := "that repository"
		if chat.ValidChoice(name) {
			shown = "`" + name + "`"
		}
		t.whisper(c.in, fmt.Sprintf("Sorry, %s can't be opened in this thread. Here you may use: %s.", shown, strings.Join(open, ", ")))
		return
	}
	if name == t.rec.Repo {
		t.say(fmt.Sprintf("📁 This thread works in `%s` already.", name))
		return
	}
	if !t.mayChoose(ctx, c.author.ID, name) {
		t.log.Info("refused a repository choice by someone who neither asked here nor approves", "user", c.author.ID)
		t.whisper(c.in, fmt.Sprintf("Sorry, only someone who asked for work in this thread or an approver of `%s` can choose its repository.", name))
		return
	}
	who := "`" + codeSafe(displayName(c.author)) + "`"
	if t.rec.Repo == "" {
		t.chooseRepo(ctx, name, who)
		return
	}
	if t.running() || t.waitingForSlot() || t.working > 0 {
		t.say("⏳ I'm working in this thread: change its repository with `!repo` once I'm done (or `!stop` me).")
		return
	}
	if why := t.repoFixed(ctx); why != "" {
		t.say(why)
		return
	}
	old := t.rec.Repo
	if err := t.moveTo(ctx, name); err != nil {
		t.log.Warn("moving the thread to another repository", "repo", name, "err", err)
		t.say("⚠️ I couldn't move this thread to `" + name + "`: " + userError(err))
		return
	}
	t.log.Info("thread moved to another repository", "from", old, "to", name, "user", c.author.ID)
	t.closeMenu(ctx, fmt.Sprintf("📁 `%s`, chosen by %s.", name, who))
	t.say(fmt.Sprintf("📁 This thread now works in `%s` (was `%s`), chosen by %s: a fresh `%s`; the conversation goes on.", name, old, who, t.rec.Branch))
}

// chooseRepo gives the thread its repository and hands back the requests
// held for it, in order.
func (t *thread) chooseRepo(ctx context.Context, name, who string) {
	if err := t.moveTo(ctx, name); err != nil {
		t.log.Warn("recording the thread's repository", "repo", name, "err", err)
		t.say("⚠️ I couldn't record this thread's repository: " + userError(err))
		return
	}
	t.log.Info("thread repository chosen", "repo", name)
	if text := fmt.Sprintf("📁 Working in `%s`, chosen by %s.", name, who); !t.closeMenu(ctx, text) {
		t.say(text)
	}
	held := t.unchosen
	t.unchosen = nil
	for _, pi := range held {
		pi.parked = true // it passed the loop guard
	}
	t.requeueFront(held)
}

// mayChoose says whether user may choose the thread's repository: they
// asked for work in it (a request, held or run), or approve repo.
func (t *thread) mayChoose(ctx context.Context, user, repo string) bool {
	if t.approves(repo, user) {
		return true
	}
	for _, pi := range t.unchosen {
		if pi.in.Author.ID == user {
			return true
		}
	}
	ins, err := t.b.cfg.Store.ThreadInbound(ctx, t.rec.ID)
	if err != nil {
		t.log.Warn("reading the thread's requests", "err", err)
		return false
	}
	return slices.ContainsFunc(ins, func(in storage.Inbound) bool {
		return in.AuthorID == user && in.Mode != storage.ModeCommand
	})
}

// repoFixed is why the thread's repository may no longer change, or "":
// its branch was pushed, or has commits or changes of its own.
func (t *thread) repoFixed(ctx context.Context) string {
	if t.rec.Repo == "" {
		return ""
	}
	stays := fmt.Sprintf(": this thread stays in `%s` (start a new thread for another repository).", t.rec.Repo)
	pushes, err := t.b.cfg.Store.ThreadPushes(ctx, t.rec.ID)
	if err != nil {
		t.log.Warn("reading the thread's pushes", "err", err)
		return "⚠️ I couldn't tell whether this thread's branch was pushed" + stays
	}
	if slices.ContainsFunc(pushes, func(p storage.Push) bool { return p.Result == storage.PushOK }) || t.pushing != nil {
		return fmt.Sprintf("⛔ `%s` was pushed to `%s` already%s", t.rec.Branch, t.rec.Repo, stays)
	}
	if t.ws == nil && t.rec.WorkspacePath == "" {
		return "" // no workspace yet: nothing of its own
	}
	ws, err := t.openWorkspace(ctx)
	if err != nil {
		t.log.Warn("opening the workspace to look for work", "err", err)
		return "⚠️ I couldn't open this thread's workspace to see whether it has work" + stays
	}
	n, err := ws.Unpushed(ctx)
	if err != nil {
		t.log.Warn("counting unpushed commits", "err", err)
	}
	changed, cerr := ws.Changed(ctx)
	if cerr != nil {
		t.log.Warn("looking for changes", "err", cerr)
	}
	if err != nil || cerr != nil || n > 0 || changed {
		return fmt.Sprintf("⛔ `%s` has work not pushed yet%s", t.rec.Branch, stays)
	}
	return ""
}
