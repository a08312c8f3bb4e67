package compaction

import (
	"fmt"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
)

func TestFindCutPointVectors(t *testing.T) {
	var tenTurns []any
	for i := range 10 {
		tenTurns = append(tenTurns, userMsg(fmt.Sprintf("User %d", i)), assistantMsg(fmt.Sprintf("Assistant %d", i)))
	}
	turns := session(tenTurns...)
	longTurn := session(
		userMsg("Turn 1"), assistantMsg("A1"),
		userMsg("Turn 2"), assistantMsg("A2-1"), assistantMsg("A2-2"), assistantMsg("A2-3"),
	)
	tests := []struct {
		name    string
		entries []Entry
		keep    int
		want    CutPoint
	}{
		{"10 turns, keep 2500", turns, 2500, CutPoint{0, -1, false}},
		{"10 turns, keep 20", turns, 20, CutPoint{12, -1, false}},
		{"10 turns, keep 5", turns, 5, CutPoint{18, -1, false}},
		{"10 turns, keep 3", turns, 3, CutPoint{19, 18, true}},
		{"long turn, keep 1", longTurn, 1, CutPoint{5, 2, true}},
		{"long turn, keep 2", longTurn, 2, CutPoint{4, 2, true}},
		{"long turn, keep 3000", longTurn, 3000, CutPoint{0, -1, false}},
	}
	for _, tt := range tests {
		if got := FindCutPoint(tt.entries, 0, len(tt.entries), tt.keep); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestFindCutPointNeverAtToolResult(t *testing.T) {
	entries := session(
		userMsg("go"),
		toolCallMsg("read", `{"path":"a"}`),
		toolResultMsg(string(make([]byte, 400))), // 100 tokens
		toolResultMsg(string(make([]byte, 400))),
	)
	// The budget is reached at the last tool result, and no valid cut point follows
	// it: pi then keeps everything from the first cut point.
	if got := FindCutPoint(entries, 0, len(entries), 50); got != (CutPoint{0, -1, false}) {
		t.Errorf("budget reached inside tool results: got %+v, want {0 -1 false}", got)
	}
	// Reached at the first result: the cut moves back to no earlier than that, so to
	// the next valid point — there is none — same answer.
	if got := FindCutPoint(entries, 0, len(entries), 150); got != (CutPoint{0, -1, false}) {
		t.Errorf("budget reached at the first result: got %+v, want {0 -1 false}", got)
	}
	// Reached at the call: cut there, splitting the turn opened by "go".
	if got := FindCutPoint(entries, 0, len(entries), 201); got != (CutPoint{1, 0, true}) {
		t.Errorf("budget reached at the call: got %+v, want {1 0 true}", got)
	}

	only := session(toolResultMsg("x"), toolResultMsg("y"))
	if got := FindCutPoint(only, 0, 2, 1); got != (CutPoint{0, -1, false}) {
		t.Errorf("no valid cut point: got %+v, want {0 -1 false}", got)
	}
}

func TestFindCutPointBringsSettingsAlong(t *testing.T) {
	entries := session(
		userMsg("one"), assistantMsg("reply one"),
		modelChange("m2"), modelChange("m3"),
		userMsg("two"), assistantMsg("reply two"),
	)
	// Cut at "two": the model changes in front of it come into the kept part, and
	// pi then reports the turn of "one" as split (defect 3); the fixed rule does not.
	pi := FindCutPoint(entries, 0, len(entries), 4)
	if pi != (CutPoint{2, 0, true}) {
		t.Errorf("pi's rule: got %+v, want {2 0 true}", pi)
	}
	fixed := findCutPoint(entries, 0, len(entries), 4, true)
	if fixed != (CutPoint{2, -1, false}) {
		t.Errorf("fixed rule: got %+v, want {2 -1 false}", fixed)
	}

	// The scan back stops at a compaction entry.
	withCompaction := session(
		userMsg("one"), compactionAt{summary: "s", firstKept: 0}, modelChange("m2"), userMsg("two"), assistantMsg("r"),
	)
	if got := FindCutPoint(withCompaction, 0, len(withCompaction), 2); got.FirstKeptIndex != 2 {
		t.Errorf("settings after a compaction: first kept %d, want 2", got.FirstKeptIndex)
	}
}

func TestFindCutPointBashStartsTurn(t *testing.T) {
	bash := llm.Message{Role: llm.RoleBashExecution, Bash: &llm.BashExecution{Command: "ls", Output: "a"}}
	entries := session(userMsg("one"), assistantMsg("r1"), modelChange("m"), bash, assistantMsg("r2"))
	// pi: the cut entry is the model change, so the turn start search finds "one".
	if got := FindCutPoint(entries, 0, len(entries), 2); got != (CutPoint{2, 0, true}) {
		t.Errorf("pi's rule: got %+v, want {2 0 true}", got)
	}
	// Fixed: the kept part begins with the bash execution, which starts a turn.
	if got := findCutPoint(entries, 0, len(entries), 2, true); got != (CutPoint{2, -1, false}) {
		t.Errorf("fixed rule: got %+v, want {2 -1 false}", got)
	}
	// With nothing in front, pi reports a split with an empty prefix; fixed: none.
	plain := session(userMsg("one"), assistantMsg("r1"), bash, assistantMsg("r2"))
	if got := FindCutPoint(plain, 0, len(plain), 2); got != (CutPoint{2, 2, true}) {
		t.Errorf("pi's rule at a bash execution: got %+v, want {2 2 true}", got)
	}
	if got := findCutPoint(plain, 0, len(plain), 2, true); got != (CutPoint{2, -1, false}) {
		t.Errorf("fixed rule at a bash execution: got %+v, want {2 -1 false}", got)
	}
}
