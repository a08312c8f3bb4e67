package compaction

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/internal/sessiongen"
)

func TestLoadPiSessionV1(t *testing.T) {
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
	entries, st, err := LoadPiSessionStats(strings.NewReader(in))
	if err != nil {
		t.Fatalf("LoadPiSessionStats: %v", err)
	}
	if st != (LoadStats{Version: 1, Malformed: 4, Unknown: 1}) {
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

func TestLoadPiSessionV3(t *testing.T) {
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
	entries, st, err := LoadPiSessionStats(strings.NewReader(in))
	if err != nil {
		t.Fatalf("LoadPiSessionStats: %v", err)
	}
	if st != (LoadStats{Version: 3, OffBranch: 1}) {
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

func TestLoadPiSessionRejects(t *testing.T) {
	for name, in := range map[string]string{
		"empty":     "",
		"blank":     "\n\n",
		"no header": `{"type":"message","message":{"role":"user","content":"x"}}`,
		"not JSON":  "hello",
	} {
		if _, err := LoadPiSession(strings.NewReader(in)); err == nil {
			t.Errorf("%s: got no error", name)
		}
	}
	boom := errors.New("disk on fire")
	r := io.MultiReader(strings.NewReader(`{"type":"session"}`+"\n"), iotest.ErrReader(boom))
	if _, err := LoadPiSession(r); !errors.Is(err, boom) {
		t.Errorf("read error: got %v, want %v", err, boom)
	}
}

func TestLoadPiSessionLongLines(t *testing.T) {
	long := strings.Repeat("x", 3<<20) // longer than any scanner buffer
	in := `{"type":"session"}` + "\n" + `{"type":"message","message":{"role":"user","content":"` + long + `"}}` + "\r\n"
	entries, err := LoadPiSession(strings.NewReader(in))
	if err != nil || len(entries) != 1 || len(entries[0].Message.TextContent()) != len(long) {
		t.Fatalf("long line: got %d entries, err %v", len(entries), err)
	}
}

// TestLoadPiSessionFastPathChangesNothing loads the fixture, a generated
// session and damaged copies of the fixture with and without the one-pass
// message decoder, and parses them in memory (ParsePiSessionStats): entries
// and statistics must be the same.
func TestLoadPiSessionFastPathChangesNothing(t *testing.T) {
	fixture, err := os.ReadFile("testdata/before-compaction.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(19, 1))
	var gen bytes.Buffer // a v3 file: ids, parents, compactions by id
	if err := sessiongen.WritePi(&gen, sessiongen.Entries(7, 1000)); err != nil {
		t.Fatal(err)
	}
	inputs := [][]byte{fixture, gen.Bytes()}
	// The header after more than a part of blank lines; a message line
	// first (no header) after them, and with nothing before it.
	blank := bytes.Repeat([]byte(" \r\n\n"), parallelBytes/2)
	inputs = append(inputs, append(bytes.Clone(blank), fixture...))
	_, afterHeader, _ := bytes.Cut(fixture, []byte("\n"))
	inputs = append(inputs, append(bytes.Clone(blank), afterHeader...), afterHeader)
	for range 20 {
		lines := bytes.Split(bytes.Clone(fixture), []byte("\n"))
		for range 30 {
			i := 1 + r.IntN(len(lines)-1)
			l := lines[i]
			if len(l) == 0 {
				continue
			}
			switch r.IntN(4) {
			case 0: // cut short
				lines[i] = l[:r.IntN(len(l))]
			case 1: // a byte changed
				const pool = "\"\\{}[],:0x \xff"
				l[r.IntN(len(l))] = pool[r.IntN(len(pool))]
			case 2: // a key renamed
				lines[i] = bytes.Replace(l, []byte(`"role"`), []byte(`"Role"`), 1)
			case 3: // a field duplicated
				lines[i] = bytes.Replace(l, []byte(`{"role":"user",`), []byte(`{"role":"user","role":"assistant",`), 1)
			}
		}
		inputs = append(inputs, bytes.Join(lines, []byte("\n")))
	}
	defer func() { fastPath = true }()
	for i, in := range inputs {
		fastPath = true
		fast, fastStats, fastErr := LoadPiSessionStats(bytes.NewReader(in))
		// The same bytes parsed in memory (ParsePiSession takes them).
		parsed, parsedStats, parsedErr := ParsePiSessionStats(bytes.Clone(in))
		if (fastErr == nil) != (parsedErr == nil) || fastStats != parsedStats || !reflect.DeepEqual(fast, parsed) {
			t.Fatalf("input %d: ParsePiSessionStats %d entries, %+v, %v; LoadPiSessionStats %d, %+v, %v",
				i, len(parsed), parsedStats, parsedErr, len(fast), fastStats, fastErr)
		}
		fastPath = false
		slow, slowStats, slowErr := LoadPiSessionStats(bytes.NewReader(in))
		if (fastErr == nil) != (slowErr == nil) || fastStats != slowStats {
			t.Fatalf("input %d: fast path %+v, %v; encoding/json %+v, %v", i, fastStats, fastErr, slowStats, slowErr)
		}
		if !reflect.DeepEqual(fast, slow) {
			for j := range min(len(fast), len(slow)) {
				if !reflect.DeepEqual(fast[j], slow[j]) {
					t.Fatalf("input %d, entry %d:\n fast %+v\n slow %+v", i, j, fast[j], slow[j])
				}
			}
			t.Fatalf("input %d: %d entries with the fast path, %d without", i, len(fast), len(slow))
		}
	}
}

// The shortcut for linear sessions gives what the walk gives, with repeated
// ids, a first entry whose parent is missing or present, and branches.
func TestCurrentBranchShortcut(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	names := []string{"a", "b", "c", "d", "e", "f", ""}
	for range 20000 {
		n := 1 + rng.IntN(7)
		entries := make([]Entry, n)
		ids := make([]string, n)
		parents := make([]*string, n)
		linearish := rng.IntN(2) == 0
		for i := range n {
			entries[i].Seq = int64(i)
			ids[i] = names[rng.IntN(len(names))]
			switch {
			case linearish && i > 0:
				parents[i] = &ids[i-1]
			case rng.IntN(3) > 0:
				parents[i] = &names[rng.IntN(len(names))]
			}
		}
		got, gotOff := currentBranch(entries, ids, parents)
		want, wantOff := walkBranch(entries, ids, parents)
		if gotOff != wantOff || !reflect.DeepEqual(got, want) {
			t.Fatalf("ids %q parents %v: currentBranch = %v (%d off), the walk %v (%d off)", ids, parents, got, gotOff, want, wantOff)
		}
	}
}

// A large session read from a file at an offset, or from a bytes.Reader, is
// read in parts on all cores (readParallel): the entries are those of a
// sequential read, and the reader is left at its end.
func TestLoadPiSessionReadsInParts(t *testing.T) {
	var gen bytes.Buffer
	if err := sessiongen.WritePi(&gen, sessiongen.Entries(7, 1000)); err != nil {
		t.Fatal(err)
	}
	data := gen.Bytes()
	if len(data) < 2*parallelBytes {
		t.Fatalf("the session is only %d bytes", len(data))
	}
	want, err := LoadPiSession(io.MultiReader(bytes.NewReader(data))) // no ReadAt: sequential
	if err != nil {
		t.Fatal(err)
	}
	prefix := []byte("not part of the session\n")
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, append(bytes.Clone(prefix), data...), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Seek(int64(len(prefix)), io.SeekStart); err != nil {
		t.Fatal(err)
	}
	got, err := LoadPiSession(f)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("from a file at an offset: %d entries, %v; want %d", len(got), err, len(want))
	}
	if pos, _ := f.Seek(0, io.SeekCurrent); pos != int64(len(prefix)+len(data)) {
		t.Errorf("the file is left at %d, want its end %d", pos, len(prefix)+len(data))
	}
	br := bytes.NewReader(data)
	got, err = LoadPiSession(br)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("from a bytes.Reader: %d entries, %v; want %d", len(got), err, len(want))
	}
	if br.Len() != 0 {
		t.Errorf("the bytes.Reader has %d bytes left", br.Len())
	}
}

// Splitting in parts finds the lines a plain split finds: random lines,
// blank ones, Unicode spaces, lines longer than a part, '\n' just before,
// at and after the parts' edges, 1 to 7 parts.
func TestSplitInParts(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 5))
	pieces := []string{"\n", "\n\n", " \r\n", "\u00a0\n", "{\"a\":1}", "x", strings.Repeat("y", 300), " z ", "\u2028"}
	for range 3000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		data := []byte(b.String())
		var want [][]byte
		for _, l := range bytes.Split(data, []byte("\n")) {
			if l = bytes.TrimSpace(l); len(l) > 0 {
				want = append(want, l)
			}
		}
		for n := 1; n <= 7; n++ {
			got := splitInParts(data, makeParts(len(data), n))
			if len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
				t.Fatalf("%q in %d parts:\n got  %q\n want %q", data, n, got, want)
			}
		}
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
	entries, err := LoadPiSession(strings.NewReader(b.String()))
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

// countingReader is a bytes.Reader that counts the reads at offsets.
type countingReader struct {
	*bytes.Reader
	readAts atomic.Int32
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.readAts.Add(1)
	return c.Reader.ReadAt(p, off)
}

// A large session whose reader reads at offsets is read in one part per
// core (TestLoadPiSessionReadsInParts checks what is read, which a
// sequential read gives as well); a small one is read sequentially.
func TestLoadPiSessionReadsLargeSessionsAtOffsets(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var gen bytes.Buffer
	if err := sessiongen.WritePi(&gen, sessiongen.Entries(7, 1000)); err != nil {
		t.Fatal(err)
	}
	want, err := LoadPiSession(io.MultiReader(bytes.NewReader(gen.Bytes())))
	if err != nil {
		t.Fatal(err)
	}
	large := &countingReader{Reader: bytes.NewReader(gen.Bytes())}
	got, err := LoadPiSession(large)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%d entries, %v; want %d", len(got), err, len(want))
	}
	if n := large.readAts.Load(); n != 2 {
		t.Errorf("a %d-byte session was read with %d ReadAt calls, want 2 (one per core)", gen.Len(), n)
	}
	data, err := os.ReadFile("testdata/before-compaction.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	data = data[:bytes.LastIndexByte(data[:parallelBytes/2], '\n')+1]
	small := &countingReader{Reader: bytes.NewReader(data)}
	if _, err := LoadPiSession(small); err != nil {
		t.Fatal(err)
	}
	if n := small.readAts.Load(); n != 0 {
		t.Errorf("a small session was read with %d ReadAt calls, want 0", n)
	}
}

// growing is a session file that is appended to while it is read: its size,
// taken first (Len), is the session's; reads at offsets and reads on from its
// end see the appended lines, as with a real file.
type growing struct {
	all  []byte // the session and what was appended
	size int    // the session's size when its length was taken
	pos  int64
}

func (g *growing) Len() int { return g.size - int(g.pos) }

func (g *growing) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(g.all).ReadAt(p, off)
}

func (g *growing) Read(p []byte) (int, error) {
	n, err := g.ReadAt(p, g.pos)
	g.pos += int64(n)
	if err == io.EOF && n > 0 {
		err = nil
	}
	return n, err
}

func (g *growing) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		g.pos = off
	case io.SeekCurrent:
		g.pos += off
	default:
		g.pos = int64(len(g.all)) + off
	}
	return g.pos, nil
}

// A session that grows while it is read in parts gives the entries of the
// whole file, whether the growth starts a line, ends one or is a newline.
func TestLoadPiSessionThatGrowsWhileRead(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	var gen bytes.Buffer
	if err := sessiongen.WritePi(&gen, sessiongen.Entries(7, 1200)); err != nil {
		t.Fatal(err)
	}
	data := gen.Bytes()
	if data[len(data)-1] != '\n' {
		t.Fatal("the session does not end with a newline")
	}
	last := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1 // where its last line starts
	want, err := LoadPiSession(io.MultiReader(bytes.NewReader(data)))
	if err != nil {
		t.Fatal(err)
	}
	// The file when its size was taken: without its last line, cut in
	// the middle of it, without the final newline.
	for _, size := range []int{last, last + (len(data)-last)/2, len(data) - 1} {
		if size < 2*parallelBytes {
			t.Fatalf("a %d-byte session is not read in parts", size)
		}
		got, err := LoadPiSession(&growing{all: bytes.Clone(data), size: size})
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("grown from %d to %d bytes: %d entries, %v; want %d", size, len(data), len(got), err, len(want))
		}
	}
}
