package bridge

import (
	"github.com/threadsmith/threadsmith/chat"
)

// The buttons of a thread's messages. Each command button stands for the
// command of the same name: its click reaches Receive as that command's text
// (chat.ActionText), so it is routed, de-duplicated and allowed or refused
// exactly as the command typed would be.
//
// A run's status message carries Stop while the run works; once it is over
// it carries Diff and the pull request's button, from the thread's latest
// push on (the branch has something to show only then).

// runActions are the buttons of a running run's status message.
var runActions = []chat.Action{{ID: "stop", Label: "Stop", Danger: true}}

// pushedActions are the buttons of a finished run's status message once the
// branch was pushed: Diff, and a link to the pull request (prURL), or a
// button that runs !pr when the repository has pull requests but the thread
// has none yet (the forge failed: !pr tries again and says why).
func pushedActions(prURL string, prs bool) []chat.Action {
	acts := []chat.Action{{ID: "diff", Label: "Diff"}}
	switch {
	case prURL != "":
		acts = append(acts, chat.Action{ID: "pr", Label: "Open PR", URL: prURL})
	case prs:
		acts = append(acts, chat.Action{ID: "pr", Label: "Open PR"})
	}
	return acts
}

// offerPushed puts Diff and the pull request's button on the thread's
// latest status message (or the running one's, when it ends).
func (t *thread) offerPushed(prURL string, prs bool) {
	if t.view != nil {
		t.offer(pushedActions(prURL, prs))
	}
}
