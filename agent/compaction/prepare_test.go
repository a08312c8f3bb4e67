package compaction

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
)

func keep(n int) Settings { return Settings{Enabled: true, ReserveTokens: 16384, KeepRecentTokens: n} }

// big returns a text of n tokens by pi's estimate.
func big(label string, n int) string { return label + strings.Repeat(".", 4*n-len(label)) }

// Beat pi, defect 1: the messages a compaction kept verbatim must be summarized by
// the next one. pi starts after the compaction entry and loses them.
func TestPrepareSummarizesWhatThePreviousCompactionKept(t *testing.T) {
	entries := session(
		userMsg("u1"), assistantMsg("a1"), // 0, 1: summarized by the first compaction
		userMsg("u2 kept"), assistantMsg("a2 kept"), // 2, 3: kept by it
		compactionAt{summary: "first summary", firstKept: 2},  // 4
		userMsg(big("u3", 100)), assistantMsg(big("a3", 100)), // 5, 6
		userMsg(big("u4", 100)), assistantMsg(big("a4", 100)), // 7, 8
	)
	p, err := Prepare(entries, keep(200))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if p.StartIndex != 2 || p.FirstKeptIndex != 7 || p.IsSplitTurn {
		t.Errorf("Prepare: got start %d, first kept %d, split %v; want 2, 7, false", p.StartIndex, p.FirstKeptIndex, p.IsSplitTurn)
	}
	got := texts(p.MessagesToSummarize)
	want := []string{"u2 kept", "a2 kept", big("u3", 100), big("a3", 100)}
	if !slices.Equal(got, want) {
		t.Errorf("MessagesToSummarize: got %q, want %q", short(got), short(want))
	}
	if p.PreviousSummary != "first summary" {
		t.Errorf("PreviousSummary: got %q, want %q", p.PreviousSummary, "first summary")
	}

	// What pi does: the range starts after the compaction entry, so "u2 kept" and
	// "a2 kept" are neither summarized nor kept.
	cut := FindCutPoint(entries, 5, len(entries), 200)
	if piGot := texts(messagesIn(entries, 5, cut.FirstKeptIndex)); slices.Contains(piGot, "u2 kept") {
		t.Errorf("pi's range unexpectedly includes the kept messages: %q", short(piGot))
	}
}

// When everything after the previous compaction fits, the cut may fall among the
// messages it kept: what lies before the cut is summarized (here as the beginning of
// the turn u2 opened), the rest stays.
func TestPrepareCutInsideThePreviouslyKeptPart(t *testing.T) {
	entries := session(
		userMsg("u1"), assistantMsg("a1"),
		userMsg("u2"), assistantMsg(big("a2", 100)), // kept by the compaction
		compactionAt{summary: "first", firstKept: 2},
		userMsg("u3"), assistantMsg("a3"),
	)
	p, err := Prepare(entries, keep(50))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if p.FirstKeptIndex != 3 || p.FirstKeptSeq != 3 || !p.IsSplitTurn || p.TurnStartIndex != 2 {
		t.Errorf("cut: got first kept %d (seq %d), split %v at %d; want 3, split at 2", p.FirstKeptIndex, p.FirstKeptSeq, p.IsSplitTurn, p.TurnStartIndex)
	}
	if got := texts(p.TurnPrefixMessages); len(p.MessagesToSummarize) != 0 || !slices.Equal(got, []string{"u2"}) {
		t.Errorf("got %d messages to summarize and prefix %q; want none and [u2]", len(p.MessagesToSummarize), got)
	}
}

// Beat pi, defect 2 (the Prepare side; Summarize keeps the summary): a split turn
// with no earlier history leaves nothing but the prefix, and the previous summary
// must still be there for Summarize to carry.
func TestPrepareSplitTurnWithoutEarlierHistory(t *testing.T) {
	entries := session(
		userMsg("u1"), assistantMsg("a1"),
		compactionAt{summary: "first summary", firstKept: 2}, // keeps nothing
		userMsg("long turn"), assistantMsg(big("step 1", 100)), assistantMsg(big("step 2", 100)), assistantMsg(big("step 3", 100)),
	)
	p, err := Prepare(entries, keep(150))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if !p.IsSplitTurn || p.TurnStartIndex != 3 || p.FirstKeptIndex != 5 {
		t.Errorf("Prepare: got split %v, turn start %d, first kept %d; want true, 3, 5", p.IsSplitTurn, p.TurnStartIndex, p.FirstKeptIndex)
	}
	if len(p.MessagesToSummarize) != 0 {
		t.Errorf("MessagesToSummarize: got %q, want none", short(texts(p.MessagesToSummarize)))
	}
	if got := texts(p.TurnPrefixMessages); !slices.Equal(got, []string{"long turn", big("step 1", 100)}) {
		t.Errorf("TurnPrefixMessages: got %q", short(got))
	}
	if p.PreviousSummary != "first summary" {
		t.Errorf("PreviousSummary: got %q, want %q", p.PreviousSummary, "first summary")
	}
}

// Beat pi, defect 3: a model change right before the user message at the cut does
// not make a split turn.
func TestPrepareSettingsBeforeUserIsNotASplitTurn(t *testing.T) {
	entries := session(
		userMsg("u1"), assistantMsg(big("a1", 100)),
		modelChange("other-model"),
		userMsg(big("u2", 10)), assistantMsg(big("a2", 10)),
	)
	p, err := Prepare(entries, keep(20))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if p.IsSplitTurn || p.TurnStartIndex != -1 || len(p.TurnPrefixMessages) != 0 || p.FirstKeptIndex != 2 {
		t.Errorf("Prepare: got split %v, turn start %d, %d prefix messages, first kept %d; want false, -1, 0, 2",
			p.IsSplitTurn, p.TurnStartIndex, len(p.TurnPrefixMessages), p.FirstKeptIndex)
	}
	if got := texts(p.MessagesToSummarize); !slices.Equal(got, []string{"u1", big("a1", 100)}) {
		t.Errorf("MessagesToSummarize: got %q, want u1 and a1", short(got))
	}
	// pi's rule on the same entries calls it a split of the turn of u1.
	if pi := FindCutPoint(entries, 0, len(entries), 20); !pi.IsSplitTurn || pi.TurnStartIndex != 0 {
		t.Errorf("pi's rule: got %+v, want a split turn starting at 0", pi)
	}
}

func TestPrepareNothingToCompact(t *testing.T) {
	tests := []struct {
		name    string
		entries []Entry
	}{
		{"empty", nil},
		{"everything fits", session(userMsg("hi"), assistantMsg("hello"))},
		{"just compacted", session(userMsg(big("u", 100)), assistantMsg("a"), compactionAt{summary: "s", firstKept: 1})},
		{"everything since the compaction fits", session(userMsg(big("u", 100)), compactionAt{summary: "s", firstKept: 1}, userMsg("x"))},
	}
	for _, tt := range tests {
		p, err := Prepare(tt.entries, keep(20000))
		if !errors.Is(err, ErrNothingToCompact) {
			t.Errorf("%s: got %+v, %v; want ErrNothingToCompact", tt.name, p, err)
		}
	}
}

func TestPrepareFileLists(t *testing.T) {
	entries := session(
		userMsg("go"),
		toolCallMsg("read", `{"path":"a.ts"}`),
		toolCallMsg("read", `{"path":"b.ts","offset":10}`),
		toolCallMsg("edit", `{"path":"a.ts","oldText":"x","newText":"y"}`),
		toolCallMsg("write", `{"content":"{\"path\":\"nested.ts\"}","path":"c.ts"}`),
		toolCallMsg("bash", `{"path":"not-a-file-op.ts"}`),
		toolCallMsg("read", `{"path":42}`),
		userMsg(big("next", 100)), assistantMsg("done"),
	)
	p, err := Prepare(entries, keep(50))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if !slices.Equal(p.ReadFiles, []string{"b.ts"}) || !slices.Equal(p.ModifiedFiles, []string{"a.ts", "c.ts"}) {
		t.Errorf("file lists: got read %q, modified %q; want [b.ts], [a.ts c.ts]", p.ReadFiles, p.ModifiedFiles)
	}

	// Merged with the previous compaction's lists; a file read before and written
	// now is modified.
	withPrev := session(
		userMsg("u"), compactionAt{summary: "s", firstKept: 1, read: []string{"x.ts", "c.ts"}, mod: []string{"y.ts"}},
		userMsg("go"), toolCallMsg("write", `{"path":"c.ts","content":""}`), toolCallMsg("read", `{"path":"z.ts"}`),
		userMsg(big("next", 100)), assistantMsg("done"),
	)
	p, err = Prepare(withPrev, keep(50))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if !slices.Equal(p.ReadFiles, []string{"x.ts", "z.ts"}) || !slices.Equal(p.ModifiedFiles, []string{"c.ts", "y.ts"}) {
		t.Errorf("merged file lists: got read %q, modified %q; want [x.ts z.ts], [c.ts y.ts]", p.ReadFiles, p.ModifiedFiles)
	}
}

func TestPrepareIgnoresUsageFromBeforeTheCompaction(t *testing.T) {
	stale := assistantMsg("a2")
	stale.Usage = &llm.Usage{TotalTokens: 150000} // measured the context before compaction
	entries := session(
		userMsg("u1"), userMsg(big("u2", 100)), stale,
		compactionAt{summary: big("sum", 10), firstKept: 1},
		userMsg(big("u3", 100)), userMsg(big("u4", 100)),
	)
	// No reply since the compaction: everything live is estimated — summary 10,
	// kept 100 + 1 ("a2"), new 200.
	if got := LiveContextTokens(entries); got != 311 {
		t.Errorf("LiveContextTokens: got %d, want 311", got)
	}
	p, err := Prepare(entries, keep(150))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if p.TokensBefore != 311 {
		t.Errorf("TokensBefore: got %d, want 311", p.TokensBefore)
	}
}

func TestPrepareDoesNotModifyEntries(t *testing.T) {
	entries := session(
		userMsg("u1"), toolCallMsg("read", `{"path":"a"}`), toolResultMsg("x"),
		compactionAt{summary: "s", firstKept: 1, read: []string{"q"}},
		userMsg(big("u2", 100)), assistantMsg(big("a2", 100)),
	)
	before, _ := json.Marshal(entries)
	if _, err := Prepare(entries, keep(50)); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if after, _ := json.Marshal(entries); string(after) != string(before) {
		t.Error("Prepare modified its input")
	}
}

// short abbreviates long test texts in failure messages.
func short(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.TrimRight(s, ".")
	}
	return out
}

// A compaction whose cut falls before the previous compaction entry still rebuilds
// the right live context with the transcript's own rule, and the next Prepare starts
// from its first kept entry.
func TestCompactionEntryBeforeAnEarlierOne(t *testing.T) {
	entries := session(
		userMsg("u1"), assistantMsg("a1"),
		userMsg("u2"), assistantMsg(big("a2", 100)),
		compactionAt{summary: "first", firstKept: 2},
		userMsg("u3"), assistantMsg("a3"),
	)
	p, err := Prepare(entries, keep(50))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	r := Result{Summary: "second", FirstKeptSeq: p.FirstKeptSeq, TokensBefore: p.TokensBefore}
	c := r.Compaction("threshold")
	entries = append(entries, Entry{Seq: int64(len(entries)), Type: transcript.EntryCompaction, Compaction: &c})

	live := transcript.BuildContext(entries).Messages
	got := []string{live[0].Summary}
	got = append(got, texts(live[1:])...)
	if want := []string{"second", big("a2", 100), "u3", "a3"}; !slices.Equal(got, want) {
		t.Errorf("live context: got %q, want %q", short(got), short(want))
	}

	entries = append(entries, userEntry(len(entries), big("u4", 100)), userEntry(len(entries)+1, "u5"))
	p2, err := Prepare(entries, keep(50))
	if err != nil {
		t.Fatalf("second Prepare: %v", err)
	}
	if p2.StartIndex != 3 || p2.PreviousSummary != "second" {
		t.Errorf("second Prepare: got start %d, previous %q; want 3, \"second\"", p2.StartIndex, p2.PreviousSummary)
	}
	if got := texts(p2.MessagesToSummarize); !slices.Equal(got, []string{big("a2", 100), "u3", "a3"}) {
		t.Errorf("second Prepare summarizes %q", short(got))
	}
}

func userEntry(seq int, text string) Entry { return transcript.MessageEntry(int64(seq), userMsg(text)) }

// FuzzStringField checks the path lookup in tool-call arguments against
// encoding/json on valid JSON objects (the last of repeated keys wins, as in
// JSON.parse).
func FuzzStringField(f *testing.F) {
	for _, seed := range []string{
		`{"path":"a.go"}`, `{"content":"x \"path\": \\\"no\\\" ","path":"b.go"}`, `{"path":"a","path":"b"}`,
		`{"p\u0061th":"esc"}`, `{"path":"caf\u00e9 \"q\""}`, `{"path":1}`, `{"a":{"path":"nested"},"path":"top"}`,
		`{"content":"` + strings.Repeat(`fmt.Println(\"x\")\n`, 20) + `","path":"long.go"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return
		}
		var want string
		wantOK := json.Unmarshal(m["path"], &want) == nil && len(m["path"]) > 0 && m["path"][0] == '"'
		got, ok := stringField(raw, "path")
		if ok != wantOK || got != want {
			t.Fatalf("stringField(%s) = %q, %v; encoding/json: %q, %v", raw, got, ok, want, wantOK)
		}
		if b, plain := plainStringField(raw, "path"); plain && string(b) != want {
			t.Fatalf("plainStringField(%s) = %q, want %q", raw, b, want)
		}
	})
}

// The live context starts at the first entry whose Seq is at least the
// compaction's FirstKeptSeq, whatever gaps Seq has, and right after the
// compaction when no entry before it is that recent.
func TestLiveContextStartsAtTheFirstKeptSeq(t *testing.T) {
	base := session(
		userMsg(big("u1", 10)), assistantMsg(big("a1", 20)), // seq 0, 10
		userMsg(big("u2", 40)), assistantMsg(big("a2", 80)), // seq 20, 30
		compactionAt{summary: big("s", 5), firstKept: 0}, // seq 40
		userMsg(big("u3", 160)),                          // seq 50
	)
	for i := range base {
		base[i].Seq = int64(10 * i)
	}
	for _, tt := range []struct {
		firstKept int64
		start     int // the index of the first entry the live context holds
		want      int // tokens: the summary, then the kept messages
	}{
		{0, 0, 5 + 10 + 20 + 40 + 80 + 160},
		{10, 1, 5 + 20 + 40 + 80 + 160},
		{11, 2, 5 + 40 + 80 + 160}, // between two entries: the later one
		{30, 3, 5 + 80 + 160},
		{31, 5, 5 + 160}, // past every entry before the compaction
		{99, 5, 5 + 160},
	} {
		entries := slices.Clone(base)
		c := *entries[4].Compaction
		c.FirstKeptSeq = tt.firstKept
		entries[4].Compaction = &c
		if got := LiveContextTokens(entries); got != tt.want {
			t.Errorf("first kept seq %d: LiveContextTokens = %d, want %d", tt.firstKept, got, tt.want)
		}
		entries = append(entries, transcript.MessageEntry(60, assistantMsg(big("a3", 10))))
		p, err := Prepare(entries, keep(5))
		if err != nil {
			t.Fatalf("first kept seq %d: Prepare: %v", tt.firstKept, err)
		}
		if p.StartIndex != tt.start {
			t.Errorf("first kept seq %d: StartIndex = %d, want %d", tt.firstKept, p.StartIndex, tt.start)
		}
	}
}
