package compaction

import (
	"os"
	"sync"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/internal/pisessiontest"
)

// The numbers in these tests are those of testdata/README.md, produced by pi 0.58.3
// on testdata/before-compaction.jsonl.

var fixture = sync.OnceValues(func() ([]Entry, error) {
	f, err := os.Open("testdata/before-compaction.jsonl")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return pisessiontest.Load(f)
})

func loadFixture(t testing.TB) []Entry {
	t.Helper()
	entries, err := fixture()
	if err != nil {
		t.Fatalf("load fixture: %v", err)
	}
	return entries
}

func TestFixtureEntryCounts(t *testing.T) {
	entries := loadFixture(t)
	if len(entries) != 1002 {
		t.Fatalf("entries: got %d, want 1002", len(entries))
	}
	types := map[transcript.EntryType]int{}
	roles := map[llm.Role]int{}
	for i, e := range entries {
		if e.Seq != int64(i) {
			t.Fatalf("entry %d has Seq %d, want %d", i, e.Seq, i)
		}
		types[e.Type]++
		if e.Message != nil {
			roles[e.Message.Role]++
		}
	}
	wantTypes := map[transcript.EntryType]int{
		transcript.EntryMessage: 990, transcript.EntryThinkingLevel: 5, transcript.EntryModelChange: 5, transcript.EntryCompaction: 2,
	}
	wantRoles := map[llm.Role]int{llm.RoleUser: 55, llm.RoleAssistant: 484, llm.RoleToolResult: 448, llm.RoleBashExecution: 3}
	assertCounts(t, "entry types", types, wantTypes)
	assertCounts(t, "message roles", roles, wantRoles)
}

func assertCounts[K comparable](t *testing.T, what string, got, want map[K]int) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
		return
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: got %v, want %v", what, got, want)
			return
		}
	}
}

func TestFixtureEstimates(t *testing.T) {
	entries := loadFixture(t)
	sums := map[llm.Role]int{}
	total, largest, largestAt := 0, 0, -1
	for i, e := range entries {
		if e.Message == nil {
			continue
		}
		n := EstimateTokens(*e.Message)
		sums[e.Message.Role] += n
		total += n
		if n > largest {
			largest, largestAt = n, i
		}
	}
	if total != 375427 {
		t.Errorf("sum of estimates: got %d, want 375427", total)
	}
	assertCounts(t, "estimates by role", sums, map[llm.Role]int{
		llm.RoleUser: 2609, llm.RoleAssistant: 143668, llm.RoleToolResult: 216268, llm.RoleBashExecution: 12882,
	})
	want := []int{167, 45, 12483, 12817, 39, 6008, 2169, -1, -1, -1}
	for i, w := range want {
		got := -1
		if entries[i].Message != nil {
			got = EstimateTokens(*entries[i].Message)
		}
		if got != w {
			t.Errorf("estimate of entry %d: got %d, want %d", i, got, w)
		}
	}
	if largestAt != 465 || largest != 14242 || entries[465].Message.Role != llm.RoleAssistant {
		t.Errorf("largest estimate: got entry %d = %d, want entry 465 (assistant) = 14242", largestAt, largest)
	}
}

func TestFixtureCompactionsAndBash(t *testing.T) {
	entries := loadFixture(t)
	type comp struct {
		at        int
		firstKept int64
		before    int
	}
	var comps []comp
	type bash struct {
		at      int
		command string
		tokens  int
	}
	var bashes []bash
	for i, e := range entries {
		if e.Compaction != nil {
			comps = append(comps, comp{i, e.Compaction.FirstKeptSeq, e.Compaction.TokensBefore})
		}
		if e.Message != nil && e.Message.Role == llm.RoleBashExecution {
			bashes = append(bashes, bash{i, e.Message.Bash.Command, EstimateTokens(*e.Message)})
		}
	}
	wantComps := []comp{{358, 292, 175004}, {627, 550, 185014}}
	if len(comps) != len(wantComps) || comps[0] != wantComps[0] || comps[1] != wantComps[1] {
		t.Errorf("compactions: got %+v, want %+v", comps, wantComps)
	}
	wantBash := []bash{{638, "ls", 40}, {995, "ls", 40}, {1000, "find .", 12802}}
	if len(bashes) != 3 || bashes[0] != wantBash[0] || bashes[1] != wantBash[1] || bashes[2] != wantBash[2] {
		t.Errorf("bash executions: got %+v, want %+v", bashes, wantBash)
	}
}

// piContext builds the context as pi's buildSessionContext does: the latest
// summary, then every message entry from the first kept one on (failed replies
// included), and the model of the latest model change or assistant reply.
func piContext(entries []Entry) (msgs []llm.Message, provider, model string) {
	prev := lastCompaction(entries)
	start := keptStart(entries, prev)
	if prev >= 0 {
		c := entries[prev].Compaction
		msgs = append(msgs, transcript.SummaryMessage(c.Summary, c.TokensBefore, entries[prev].Timestamp))
	}
	for i, e := range entries {
		switch {
		case e.ModelChange != nil:
			provider, model = e.ModelChange.Provider, e.ModelChange.Model
		case e.Message != nil && e.Message.Role == llm.RoleAssistant:
			provider, model = e.Message.Provider, e.Message.Model
		}
		if i >= start && e.Message != nil {
			msgs = append(msgs, *e.Message)
		}
	}
	return msgs, provider, model
}

func TestFixtureContextTokens(t *testing.T) {
	entries := loadFixture(t)
	msgs, provider, model := piContext(entries)
	if len(msgs) != 446 || msgs[0].Role != llm.RoleCompactionSummary {
		t.Fatalf("context: got %d messages starting with %q, want 446 starting with the compaction summary", len(msgs), msgs[0].Role)
	}
	if provider+"/"+model != "anthropic/claude-opus-4-5" {
		t.Errorf("context model: got %s/%s, want anthropic/claude-opus-4-5", provider, model)
	}
	total, last := ContextTokens(msgs)
	if total != 180820 || last != 444 {
		t.Errorf("ContextTokens: got %d with last usage at %d, want 180820 at 444", total, last)
	}
	if usage := msgs[last].Usage.Total(); usage != 168018 || total-usage != 12802 {
		t.Errorf("ContextTokens parts: got usage %d + trailing %d, want 168018 + 12802", usage, total-usage)
	}
	if got := LiveContextTokens(entries); got != 180820 {
		t.Errorf("LiveContextTokens: got %d, want 180820", got)
	}

	// threadsmith's own context builder leaves out the failed reply (entry 846) and
	// gives the two tool calls cut off by an abort a synthetic result, so it holds
	// 447 messages; the token count is the same.
	ours := transcript.BuildContext(entries)
	total, last = ContextTokens(ours.Messages)
	if len(ours.Messages) != 447 || total != 180820 || last != 445 || ours.Model != "claude-opus-4-5" {
		t.Errorf("transcript.BuildContext: got %d messages, %d tokens, last usage at %d, model %q; want 447, 180820, 445, claude-opus-4-5",
			len(ours.Messages), total, last, ours.Model)
	}
}

func TestFixtureCutPoints(t *testing.T) {
	entries := loadFixture(t)
	tests := []struct {
		keep int
		want CutPoint
		role llm.Role
	}{
		{1, CutPoint{1000, 1000, true}, llm.RoleBashExecution},
		{1000, CutPoint{1000, 1000, true}, llm.RoleBashExecution},
		{5000, CutPoint{1000, 1000, true}, llm.RoleBashExecution},
		{10000, CutPoint{1000, 1000, true}, llm.RoleBashExecution},
		{20000, CutPoint{946, 939, true}, llm.RoleAssistant},
		{50000, CutPoint{790, 789, true}, llm.RoleAssistant},
		{100000, CutPoint{690, 677, true}, llm.RoleAssistant},
		{1000000000, CutPoint{0, -1, false}, llm.RoleUser},
	}
	for _, tt := range tests {
		got := FindCutPoint(entries, 0, len(entries), tt.keep)
		if got != tt.want {
			t.Errorf("FindCutPoint(keep %d): got %+v, want %+v", tt.keep, got, tt.want)
			continue
		}
		if role := entries[got.FirstKeptIndex].Message.Role; role != tt.role {
			t.Errorf("FindCutPoint(keep %d): cut at a %s message, want %s", tt.keep, role, tt.role)
		}
	}
}

// TestFixturePreparePi reproduces the README's preparation numbers with pi's own
// steps: the range after the last compaction, pi's cut point, and the file lists of
// the summarized and prefix messages.
func TestFixturePreparePi(t *testing.T) {
	entries := loadFixture(t)
	prev := lastCompaction(entries)
	if prev != 627 {
		t.Fatalf("last compaction: got entry %d, want 627", prev)
	}
	cut := FindCutPoint(entries, prev+1, len(entries), DefaultSettings().KeepRecentTokens)
	if cut != (CutPoint{946, 939, true}) {
		t.Fatalf("cut after the last compaction: got %+v, want {946 939 true}", cut)
	}
	history := messagesIn(entries, prev+1, cut.TurnStartIndex)
	prefix := messagesIn(entries, cut.TurnStartIndex, cut.FirstKeptIndex)
	if len(history) != 306 || len(prefix) != 7 {
		t.Errorf("pi's messages: got %d to summarize and %d in the prefix, want 306 and 7", len(history), len(prefix))
	}
	ops := newFileOps()
	for _, ms := range [][]*llm.Message{history, prefix} {
		for _, m := range ms {
			ops.addMessage(m)
		}
	}
	read, modified := ops.lists()
	if len(read) != 2 || len(modified) != 11 {
		t.Errorf("pi's file lists: got %d read and %d modified, want 2 and 11", len(read), len(modified))
	}
}

// TestFixturePrepare checks Prepare's own numbers, which differ from pi's where the
// package doc says: the 77 messages the previous compaction kept (entries 550..626)
// are summarized too, and the file they edited is listed.
func TestFixturePrepare(t *testing.T) {
	entries := loadFixture(t)
	p, err := Prepare(entries, DefaultSettings())
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if p.StartIndex != 550 || p.FirstKeptIndex != 946 || p.FirstKeptSeq != 946 || p.TurnStartIndex != 939 || !p.IsSplitTurn {
		t.Errorf("Prepare cut: got start %d, first kept %d (seq %d), turn start %d, split %v; want 550, 946 (946), 939, true",
			p.StartIndex, p.FirstKeptIndex, p.FirstKeptSeq, p.TurnStartIndex, p.IsSplitTurn)
	}
	if p.TokensBefore != 180820 {
		t.Errorf("TokensBefore: got %d, want 180820", p.TokensBefore)
	}
	if len(p.MessagesToSummarize) != 383 || len(p.TurnPrefixMessages) != 7 {
		t.Errorf("messages: got %d to summarize and %d in the prefix, want 383 (306 + 77 kept by the previous compaction) and 7",
			len(p.MessagesToSummarize), len(p.TurnPrefixMessages))
	}
	if first := p.MessagesToSummarize[0]; first.Timestamp != entries[550].Message.Timestamp {
		t.Errorf("first message to summarize: got timestamp %d, want entry 550's %d", first.Timestamp, entries[550].Message.Timestamp)
	}
	if p.PreviousSummary != entries[627].Compaction.Summary {
		t.Errorf("PreviousSummary is not the summary of entry 627")
	}
	const cwd = "/Users/badlogic/workspaces/pi-mono/"
	wantRead := []string{cwd + "packages/agent/src/agent.ts", cwd + "packages/coding-agent/src/core/messages.ts"}
	if !equalStrings(p.ReadFiles, wantRead) {
		t.Errorf("ReadFiles: got %q, want %q", p.ReadFiles, wantRead)
	}
	if len(p.ModifiedFiles) != 12 || !contains(p.ModifiedFiles, cwd+"packages/coding-agent/src/utils/config.ts") {
		t.Errorf("ModifiedFiles: got %d %q, want 12 including utils/config.ts", len(p.ModifiedFiles), p.ModifiedFiles)
	}
}

// TestFixtureSettingsBeforeUser shows defect 3 on the fixture: cutting the whole
// file at keepRecentTokens 86500 lands on the model changes (entries 709..713) in
// front of the user message 714. pi calls that a split of the turn opened at 705.
func TestFixtureSettingsBeforeUser(t *testing.T) {
	entries := loadFixture(t)
	if got := FindCutPoint(entries, 0, len(entries), 86500); got != (CutPoint{709, 705, true}) {
		t.Errorf("FindCutPoint (pi): got %+v, want {709 705 true}", got)
	}
	if got := findCutPoint(entries, 0, len(entries), 86500, true); got != (CutPoint{709, -1, false}) {
		t.Errorf("findCutPoint (fixed): got %+v, want {709 -1 false}", got)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
