package bridge

import (
	"encoding/json"
	"strings"
	"testing"

	llmfake "github.com/threadsmith/threadsmith/internal/fakes/llm"
)

// A thread's commands keep their build caches in the repository's cache
// folder, and the next thread of the repository finds them.
func TestThreadsOfARepositoryShareItsCache(t *testing.T) {
	t.Parallel()
	r := newRig(t)
	bash := func(id, command string) llmfake.Response {
		args, _ := json.Marshal(map[string]string{"command": command})
		return llmfake.ToolCallReply(llmfake.Call{ID: id, Name: "bash", Args: string(args)})
	}
	r.llm.Push(bash("b1", `mkdir -p "$GOCACHE" && echo warm > "$GOCACHE/probe"`), llmfake.TextReply("built"))
	first := testThread("95.1")
	r.say(first, alice, "build", true)
	r.waitText(first, "built")

	r.llm.Push(bash("b2", `cat "$GOCACHE/probe" > seen.txt`), llmfake.TextReply("looked"))
	second := testThread("95.2")
	r.say(second, alice, "look", true)
	r.waitText(second, "⬆️ pushed")
	rec, _ := r.thread(second)
	if got := r.remote.Files(t, rec.Branch)["seen.txt"]; strings.TrimSpace(got) != "warm" {
		t.Errorf("the second thread's cache held %q, want the first thread's build", got)
	}
}
