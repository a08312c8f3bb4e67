package bridge

import (
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent"
)

// While a threshold compaction runs after the answer (its notice below the
// status), the status still says the run is working; only the run's end
// gives it its ✓ (it showed ✓ while the summary was written).
func TestViewStatusSaysWorkingWhileCompacting(t *testing.T) {
	r := newViewRig(t, 2000)
	r.start("go on")
	r.reply(textReply("Done.", usage(3500, 2)), "Done.")
	r.play(agent.AgentEnd{}, agent.AutoCompactionStart{Reason: agent.CompactionThreshold})
	msgs := r.messages()
	if len(msgs) < 2 || !strings.HasPrefix(msgs[0].Text, workingHeaderPrefix) || strings.HasPrefix(msgs[0].Text, "✓") {
		t.Fatalf("while compacting, the status is:\n%s", render(msgs))
	}
	r.play(agent.AutoCompactionEnd{Reason: agent.CompactionThreshold, TokensBefore: 3502, TokensAfter: 800, Summary: "## Goal"})
	r.end(800, 4000, false)
	if msgs = r.messages(); strings.Contains(msgs[0].Text, "working") || !strings.HasPrefix(msgs[0].Text, "✓ ") {
		t.Fatalf("after the run, the status is:\n%s", render(msgs))
	}
}
