package pisessiontest

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
)

func TestLoadV1(t *testing.T) {
	in := strings.Join([]string{
		`{"type":"session","id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w","provider":"anthropic","modelId":"m"}`,
		`{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"plain string","timestamp":1735689601000}}`,
		`this line is not JSON`,
		``,
		`{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hm"},{"type":"text","text":"ok"},{"type":"toolCall","id":"t1","name":"read","arguments":{"path":"a.ts"}}],"provider":"anthropic","model":"m","usage":{"input":1,"output":2,"cacheRead":3,"cacheWrite":4,"totalTokens":10,"cost":{"total":0.1}},"stopReason":"toolUse","timestamp":1735689602000}}`,
		`{"type":"message","message":{"role":"toolResult","toolCallId":"t1","toolName":"read","content":[{"type":"text","text":"body"}],"isError":false,"details":{"lines":1}}}`,
		`{"type":"message","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"boom","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0}}}`,
		`{"type":"message","message":{"role":"bashExecution","command":"ls","output":"a\nb","exitCode":1,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/o"}}`,
		`[1,2,3]`,
		`{"no":"type"}`,
		`{"type":"message","message":{"role":"user","content":42}}`,
		`{"type":"model_change","timestamp":"2025-01-01T00:00:03.000Z","provider":"openai","modelId":"gpt"}`,
		`{"type":"thinking_level_change","thinkingLevel":"high"}`,
		`{"type":"label","targetId":"x","label":"bookmark"}`,
		`{"type":"compaction","summary":"sum","firstKeptEntryIndex":4,"tokensBefore":123}`,
		`{"type":"message","message":{"role":"hookMessage","customType":"ext","content":"from a hook","display":true}}`,
	}, "\n")
	entries, st, err := LoadStats(strings.NewReader(in))
	if err != nil {
		t.Fatalf("LoadStats: %v", err)
	}
	if st != (Stats{Version: 1, Malformed: 4, Unknown: 1}) {
		t.Errorf("stats: got %+v, want {Version:1 Malformed:4 Unknown:1}", st)
	}
	// Lines that are valid JSON take a position (pi's numbering) even when skipped:
	// the array, the object without a type and the undecodable message leave the
	// gap 5..7; the line that is not JSON takes none.
	var seqs []int64
	for _, e := range entries {
		seqs = append(seqs, e.Seq)
	}
	if want := []int64{0, 1, 2, 3, 4, 8, 9, 10, 11, 12}; !slices.Equal(seqs, want) {
		t.Fatalf("Seqs: got %v, want %v", seqs, want)
	}

	u := entries[0]
	if u.Type != transcript.EntryMessage || u.Message.Role != llm.RoleUser || u.Message.TextContent() != "plain string" ||
		u.Timestamp != 1735689601000 || u.Message.Timestamp != 1735689601000 {
		t.Errorf("user entry: got %+v / %+v", u, u.Message)
	}
	a := entries[1].Message
	if a.Usage == nil || a.Usage.Total() != 10 || a.StopReason != llm.StopReasonToolUse || a.Model != "m" ||
		len(a.ToolCalls()) != 1 || string(a.ToolCalls()[0].Arguments) != `{"path":"a.ts"}` || a.Content[0].Thinking != "hm" {
		t.Errorf("assistant entry: got %+v", a)
	}
	if r := entries[2].Message; r.Role != llm.RoleToolResult || r.ToolCallID != "t1" || string(r.Details) != `{"lines":1}` {
		t.Errorf("tool result entry: got %+v", r)
	}
	if e := entries[3].Message; e.StopReason != llm.StopReasonError || e.ErrorMessage != "boom" {
		t.Errorf("error reply: got %+v", e)
	}
	b := entries[4].Message
	if b.Role != llm.RoleBashExecution || b.Bash == nil || b.Bash.Command != "ls" || b.Bash.Output != "a\nb" ||
		b.Bash.ExitCode == nil || *b.Bash.ExitCode != 1 || !b.Bash.Truncated || b.Bash.FullOutputPath != "/tmp/o" {
		t.Errorf("bash entry: got %+v / %+v", b, b.Bash)
	}
	if mc := entries[5]; mc.ModelChange == nil || *mc.ModelChange != (transcript.ModelChange{Provider: "openai", Model: "gpt"}) {
		t.Errorf("model change: got %+v", mc)
	}
	if tl := entries[6]; tl.Type != transcript.EntryThinkingLevel || tl.ThinkingLevel != "high" {
		t.Errorf("thinking level: got %+v", tl)
	}
	if l := entries[7]; l.Type != "label" || !strings.Contains(string(l.Raw), `"label":"bookmark"`) {
		t.Errorf("unknown entry: got type %q raw %s; want label kept raw", l.Type, l.Raw)
	}
	c := entries[8].Compaction
	if c == nil || c.Summary != "sum" || c.TokensBefore != 123 || c.FirstKeptSeq != 3 {
		t.Errorf("compaction: got %+v, want first kept seq 3 (index 4 counts the header)", c)
	}
	if h := entries[9].Message; h.Role != llm.RoleCustom || h.CustomType != "ext" || h.TextContent() != "from a hook" || !h.Display {
		t.Errorf("hookMessage: got %+v, want a custom message", h)
	}
}

func TestLoadV3(t *testing.T) {
	in := strings.Join([]string{
		`{"type":"session","version":3,"id":"s","timestamp":"2025-01-01T00:00:00Z","cwd":"/w"}`,
		`{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:01Z","message":{"role":"user","content":[{"type":"text","text":"one"}]}}`,
		`{"type":"message","id":"b","parentId":"a","timestamp":"2025-01-01T00:00:02Z","message":{"role":"assistant","content":[{"type":"text","text":"r1"}],"stopReason":"stop"}}`,
		`{"type":"message","id":"x","parentId":"b","timestamp":"2025-01-01T00:00:03Z","message":{"role":"user","content":"abandoned branch"}}`,
		`{"type":"message","id":"c","parentId":"b","timestamp":"2025-01-01T00:00:04Z","message":{"role":"user","content":"two"}}`,
		`{"type":"compaction","id":"d","parentId":"c","timestamp":"2025-01-01T00:00:05Z","summary":"s","firstKeptEntryId":"c","tokensBefore":9,"details":{"readFiles":["r.ts"],"modifiedFiles":["m.ts"]}}`,
		`{"type":"custom_message","id":"e","parentId":"d","timestamp":"2025-01-01T00:00:06Z","customType":"note","content":"injected","display":false,"details":{"k":1}}`,
		`{"type":"custom","id":"f","parentId":"e","timestamp":"2025-01-01T00:00:07Z","customType":"state","data":{"n":2}}`,
		`{"type":"compaction","id":"g","parentId":"f","timestamp":"2025-01-01T00:00:08Z","summary":"s2","firstKeptEntryId":"nope","tokensBefore":9,"fromHook":true,"details":{"readFiles":["ignored"]}}`,
	}, "\n")
	entries, st, err := LoadStats(strings.NewReader(in))
	if err != nil {
		t.Fatalf("LoadStats: %v", err)
	}
	if st != (Stats{Version: 3, OffBranch: 1}) {
		t.Errorf("stats: got %+v, want {Version:3 OffBranch:1}", st)
	}
	var got []string
	for _, e := range entries {
		got = append(got, string(e.Type))
	}
	want := []string{"message", "message", "message", "compaction", "message", "custom", "compaction"}
	if !slices.Equal(got, want) {
		t.Fatalf("entry types: got %v, want %v (the abandoned branch left out)", got, want)
	}
	if entries[2].Message.TextContent() != "two" || entries[2].Seq != 3 {
		t.Errorf("entry 2: got %q at seq %d, want \"two\" at 3", entries[2].Message.TextContent(), entries[2].Seq)
	}
	c := entries[3].Compaction
	if c.FirstKeptSeq != 3 || !slices.Equal(c.ReadFiles, []string{"r.ts"}) || !slices.Equal(c.ModifiedFiles, []string{"m.ts"}) {
		t.Errorf("compaction by id: got %+v, want first kept seq 3 and the details' files", c)
	}
	cm := entries[4]
	if cm.Type != transcript.EntryMessage || cm.Message.Role != llm.RoleCustom || cm.Message.CustomType != "note" ||
		cm.Message.TextContent() != "injected" || string(cm.Message.Details) != `{"k":1}` || cm.Message.Timestamp == 0 {
		t.Errorf("custom_message: got %+v", cm.Message)
	}
	if cu := entries[5]; cu.Custom == nil || cu.Custom.Kind != "state" || string(cu.Custom.Data) != `{"n":2}` {
		t.Errorf("custom: got %+v", cu)
	}
	if c2 := entries[6].Compaction; c2.FirstKeptSeq != entries[6].Seq || c2.ReadFiles != nil {
		t.Errorf("hook compaction with an unknown first kept id: got %+v, want nothing kept and no files", c2)
	}
}

func TestLoadRejects(t *testing.T) {
	for name, in := range map[string]string{
		"empty":     "",
		"blank":     "\n\n",
		"no header": `{"type":"message","message":{"role":"user","content":"x"}}`,
		"not JSON":  "hello",
	} {
		if _, err := Load(strings.NewReader(in)); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
	boom := errors.New("disk on fire")
	r := io.MultiReader(strings.NewReader(`{"type":"session"}`+"\n"), iotest.ErrReader(boom))
	if _, err := Load(r); !errors.Is(err, boom) {
		t.Errorf("read error: got %v, want %v", err, boom)
	}
}

func TestLoadLongLines(t *testing.T) {
	long := strings.Repeat("x", 3<<20) // longer than any scanner buffer
	in := `{"type":"session"}` + "\n" + `{"type":"message","message":{"role":"user","content":"` + long + `"}}` + "\r\n"
	entries, err := Load(strings.NewReader(in))
	if err != nil || len(entries) != 1 || len(entries[0].Message.TextContent()) != len(long) {
		t.Fatalf("long line: got %d entries, err %v", len(entries), err)
	}
}

// A compaction's firstKeptEntryId is looked up among the entries before it,
// the last of a repeated id winning, whether the lookups scan from the end
// or (after many) use a map: many compactions keeping from early, late,
// repeated and missing ids.
func TestCompactionIDLookups(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 6))
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"s"}` + "\n")
	var ids []string
	want := map[int]int64{} // line's entry position -> expected FirstKeptSeq
	parent := "null"
	for i := range 3000 {
		id := fmt.Sprintf("e%d", i)
		if i%97 == 5 && i > 0 {
			id = ids[r.IntN(len(ids))] // a repeated id
		}
		if i%10 == 9 {
			var keep string
			switch r.IntN(4) {
			case 0:
				keep = ids[r.IntN(min(len(ids), 20))] // early
			case 1:
				keep = ids[len(ids)-1-r.IntN(min(len(ids), 20))] // late
			case 2:
				keep = "missing"
			default:
				keep = ids[r.IntN(len(ids))]
			}
			exp := int64(i) // not found: nothing before is kept
			for j := len(ids) - 1; j >= 0; j-- {
				if ids[j] == keep {
					exp = int64(j)
					break
				}
			}
			want[i] = exp
			fmt.Fprintf(&b, `{"type":"compaction","id":%q,"parentId":%s,"summary":"s","firstKeptEntryId":%q,"tokensBefore":1}`+"\n", id, parent, keep)
		} else {
			fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%s,"message":{"role":"user","content":"m"}}`+"\n", id, parent)
		}
		ids = append(ids, id)
		parent = strconv.Quote(id)
	}
	entries, err := Load(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if e.Compaction != nil {
			n++
			if w := want[int(e.Seq)]; e.Compaction.FirstKeptSeq != w {
				t.Fatalf("compaction at %d keeps from %d, want %d", e.Seq, e.Compaction.FirstKeptSeq, w)
			}
		}
	}
	if n != len(want) {
		t.Fatalf("%d compactions, want %d", n, len(want))
	}
}
