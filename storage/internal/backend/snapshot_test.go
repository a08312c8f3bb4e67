package backend_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"reflect"
	"runtime"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/internal/sessiongen"
	"github.com/threadsmith/threadsmith/storage"
	"github.com/threadsmith/threadsmith/storage/internal/backend"
)

// stored is entries as a load from the rows gives them: each encoded and
// decoded through the JSON payload.
func stored(t testing.TB, entries []transcript.Entry) []transcript.Entry {
	t.Helper()
	var d backend.Decoder
	for _, e := range entries {
		r, err := backend.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		d.Add(r.Seq, r.Type, r.TS, []byte(r.Payload))
	}
	got, err := d.Result()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func snapshotRoundTrip(t testing.TB, entries []transcript.Entry) []transcript.Entry {
	t.Helper()
	b, err := backend.EncodeSnapshot(entries)
	if err != nil {
		t.Fatal(err)
	}
	got, err := backend.DecodeSnapshot(b)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// fill sets every exported field reachable from v (a pointer) to a value
// that is not its zero, different per field: a field the snapshot forgets
// then comes back zero, or another field's value.
func fill(v reflect.Value, n *int) {
	*n++
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), n)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), n)
			}
		}
	case reflect.Slice:
		if v.Type() == reflect.TypeFor[json.RawMessage]() {
			v.SetBytes([]byte(`{"n":` + string(rune('0'+*n%10)) + `}`))
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i), n)
		}
		v.Set(s)
	case reflect.String:
		v.SetString("s" + string(rune('a'+*n%26)) + "é😀")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(*n) * 1_000_003)
	case reflect.Float64:
		v.SetFloat(float64(*n) + 0.25)
	default:
		panic("fill: no value for " + v.Type().String())
	}
}

// Every field of a message, its blocks, usage, cost, typed error and bash
// execution comes back from a snapshot: a field added to llm.Message and not
// to the snapshot fails here.
func TestSnapshotKeepsEveryField(t *testing.T) {
	var m llm.Message
	n := 0
	fill(reflect.ValueOf(&m), &n)
	entries := []transcript.Entry{{Seq: 3, Type: transcript.EntryMessage, Timestamp: 99, Message: &m}}
	got := snapshotRoundTrip(t, entries)
	if len(got) != 1 || !reflect.DeepEqual(transcript.WithoutUnits(got), entries) {
		t.Fatalf("snapshot round trip lost a field:\n got  %+v\n want %+v", *got[0].Message, m)
	}
	for i, c := range got[0].Message.Content {
		if c.TextUnits() != llm.UTF16Len(c.Text) || c.ThinkingUnits() != llm.UTF16Len(c.Thinking) {
			t.Errorf("block %d: carried UTF-16 lengths %d, %d; want %d, %d", i, c.TextUnits(), c.ThinkingUnits(), llm.UTF16Len(c.Text), llm.UTF16Len(c.Thinking))
		}
	}
}

// Every entry type, and generated sessions of each shape: what a snapshot of
// stored entries gives back is what the rows gave, field for field.
func TestSnapshotEqualsTheRows(t *testing.T) {
	ec := transcript.Entry{Seq: 2, Type: transcript.EntryCompaction, Timestamp: 5, Compaction: &transcript.Compaction{Summary: "s", FirstKeptSeq: 1, TokensBefore: 9, ReadFiles: []string{"a"}, Reason: "r"}}
	kinds := []transcript.Entry{
		transcript.MessageEntry(0, llm.UserText("hi")),
		{Seq: 1, Type: transcript.EntryModelChange, ModelChange: &transcript.ModelChange{Provider: "openai", Model: "m"}},
		ec,
		{Seq: 3, Type: transcript.EntryThinkingLevel, ThinkingLevel: "high"},
		{Seq: 4, Type: transcript.EntryCustom, Custom: &transcript.Custom{Kind: "k", Data: json.RawMessage(`{"a":1}`)}},
		{Seq: 5, Type: "future_kind", Raw: json.RawMessage(`{"x":[1,2]}`)},
		transcript.MessageEntry(6, llm.Message{Role: llm.RoleAssistant}),
	}
	cases := map[string][]transcript.Entry{"kinds": kinds}
	for name, sh := range map[string]sessiongen.Shape{
		"ascii":       {Bytes: 100_000},
		"nonascii":    {Bytes: 100_000, NonASCII: true},
		"compactions": {Entries: 900},
		"huge":        {Bytes: 2_000_000, HugeEvery: 5, HugeMin: 100_000, HugeMax: 300_000},
	} {
		cases[name] = sessiongen.Generate(11, sh)
	}
	for name, entries := range cases {
		t.Run(name, func(t *testing.T) {
			rows := stored(t, entries)
			got := snapshotRoundTrip(t, rows)
			if !reflect.DeepEqual(transcript.WithoutUnits(got), transcript.WithoutUnits(rows)) {
				for i := range rows {
					if i >= len(got) || !reflect.DeepEqual(transcript.WithoutUnits(got[i:i+1]), transcript.WithoutUnits(rows[i:i+1])) {
						t.Fatalf("entry %d of %d differs:\n got  %+v\n want %+v", i, len(rows), got[min(i, len(got)-1)], rows[i])
					}
				}
				t.Fatalf("%d entries, want %d", len(got), len(rows))
			}
			if !reflect.DeepEqual(transcript.BuildContext(transcript.WithoutUnits(got)), transcript.BuildContext(transcript.WithoutUnits(rows))) {
				t.Fatal("contexts differ")
			}
		})
	}
}

// A damaged snapshot is an error wrapping storage.ErrCorrupt, never a panic
// or a wrong session: every byte flipped, every cut, another format.
func TestSnapshotDamaged(t *testing.T) {
	b, err := backend.EncodeSnapshot(stored(t, sessiongen.Generate(3, sessiongen.Shape{Entries: 8, ResultMin: 200, ResultMax: 600})))
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, d []byte) {
		t.Helper()
		if _, err := backend.DecodeSnapshot(d); !errors.Is(err, storage.ErrCorrupt) {
			t.Fatalf("%s: DecodeSnapshot = %v, want ErrCorrupt", what, err)
		}
	}
	for i := range b {
		d := append([]byte(nil), b...)
		d[i] ^= 0x41
		check("byte flipped", d)
	}
	for n := range len(b) {
		check("cut", append([]byte(nil), b[:n]...))
	}
	other := append([]byte(nil), b...)
	other[3] = 2
	check("another format", other)
	// A message under a type that is not "message" (checksum good): the
	// entry would come back as neither.
	retyped := bytes.Replace(b[4:len(b)-4], []byte("\amessage"), []byte("\amessagc"), 1)
	check("a message of another type", backend.SealSnapshot(retyped))
	// A count more than the bytes after it can hold (9,000 entries take at
	// least 36,000 bytes; 10,000 follow) is refused before the decoder
	// allocates for it (3.3 MB of entries and messages).
	lying := binary.AppendUvarint(nil, 9000)
	lying = backend.SealSnapshot(append(append(lying, 0, 0, 0), make([]byte, 10_000)...))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	check("a count the bytes cannot hold", lying)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("decoding a %d-byte snapshot with a lying count allocated %d bytes", len(lying), n)
	}
}

// FuzzDecodeSnapshot: no body (sealed with the magic and a good checksum,
// so that it reaches the decoder) makes the decoder panic; what decodes,
// encodes again to the same entries.
func FuzzDecodeSnapshot(f *testing.F) {
	for _, n := range []int{0, 3, 12} {
		b, err := backend.EncodeSnapshot(stored(f, sessiongen.Generate(5, sessiongen.Shape{Entries: n})))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b[4 : len(b)-4])
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := backend.DecodeSnapshot(backend.SealSnapshot(body))
		if err != nil {
			return
		}
		again := snapshotRoundTrip(t, got)
		if !reflect.DeepEqual(transcript.WithoutUnits(again), transcript.WithoutUnits(got)) {
			t.Fatal("a decoded snapshot does not encode to itself")
		}
	})
}

// The live entries of a snapshot and the entries after it are the live
// entries of all of them, for every point a snapshot could be taken at in a
// session that compacts; FromSnapshot refuses only a compaction that keeps
// more than the snapshot holds.
func TestFromSnapshotEqualsLiveEntries(t *testing.T) {
	entries := sessiongen.Generate(9, sessiongen.Shape{Entries: 700, CompactAt: 40_000, Keep: 10_000})
	compactions := 0
	for _, e := range entries {
		if e.Type == transcript.EntryCompaction {
			compactions++
		}
	}
	if compactions < 3 {
		t.Fatalf("the session has %d compactions; the test needs several", compactions)
	}
	want := backend.LiveEntries(entries)
	for cut := 0; cut <= len(entries); cut++ {
		snap := backend.LiveEntries(entries[:cut])
		got, ok := backend.FromSnapshot(snap, entries[cut:])
		if !ok {
			t.Fatalf("cut at %d: refused", cut)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("cut at %d: %d live entries, want %d", cut, len(got), len(want))
		}
	}
	// A compaction whose first kept entry lies before the snapshot's own:
	// the snapshot does not hold what it keeps.
	snap := backend.LiveEntries(entries)
	back := transcript.Entry{Seq: int64(len(entries)), Type: transcript.EntryCompaction, Compaction: &transcript.Compaction{Summary: "s", FirstKeptSeq: 0}}
	if _, ok := backend.FromSnapshot(snap, []transcript.Entry{back}); ok {
		t.Fatal("a compaction keeping entries the snapshot left out was taken")
	}
}

// BenchmarkDecode decodes a 100 KB session's live entries from a snapshot
// and, the baseline, from the entries' JSON payloads as the rows hold them.
func BenchmarkDecode(b *testing.B) {
	for i, sh := range []struct {
		name  string
		shape sessiongen.Shape
	}{
		{"ascii-100KB", sessiongen.Shape{Bytes: 100_000}},
		{"nonascii-100KB", sessiongen.Shape{Bytes: 100_000, NonASCII: true}},
	} {
		entries := stored(b, sessiongen.Generate(uint64(i+1), sh.shape))
		snap, err := backend.EncodeSnapshot(entries)
		if err != nil {
			b.Fatal(err)
		}
		rows := make([]backend.Row, len(entries))
		for j, e := range entries {
			if rows[j], err = backend.Encode(e); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(sh.name+"/snapshot", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := backend.DecodeSnapshot(snap); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(sh.name+"/json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var d backend.Decoder
				for _, r := range rows {
					d.Add(r.Seq, r.Type, r.TS, []byte(r.Payload))
				}
				if _, err := d.Result(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
