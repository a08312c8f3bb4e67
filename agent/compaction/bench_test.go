package compaction

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/internal/sessiongen"
)

// BenchmarkPrepare prepares a compaction of the fixture: 1,002 entries, the
// previous compaction at 627, 383 messages to summarize.
func BenchmarkPrepare(b *testing.B) {
	entries := loadFixture(b)
	s := DefaultSettings()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Prepare(entries, s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrepareFirstCompaction prepares a session of 1,000 entries with no
// earlier compaction (the fixture's first 358 entries, repeated), so most of it —
// 794 messages — is summarized.
func BenchmarkPrepareFirstCompaction(b *testing.B) {
	fx := loadFixture(b)
	var entries []Entry
	for len(entries) < 1000 {
		for _, e := range fx[:358] {
			if len(entries) == 1000 {
				break
			}
			e.Seq = int64(len(entries))
			entries = append(entries, e)
		}
	}
	s := DefaultSettings()
	b.ReportAllocs()
	for b.Loop() {
		p, err := Prepare(entries, s)
		if err != nil {
			b.Fatal(err)
		}
		if len(p.MessagesToSummarize) < 750 {
			b.Fatalf("summarizing only %d messages", len(p.MessagesToSummarize))
		}
	}
}

// BenchmarkEstimateTokens estimates every message of the fixture; ns/msg is the
// cost per message.
func BenchmarkEstimateTokens(b *testing.B) {
	var msgs []llm.Message
	for _, e := range loadFixture(b) {
		if e.Message != nil {
			msgs = append(msgs, *e.Message)
		}
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		for i := range msgs {
			EstimateTokens(msgs[i])
		}
		n += len(msgs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/msg")
}

// BenchmarkEstimateTokensByRole measures one typical message of each kind.
func BenchmarkEstimateTokensByRole(b *testing.B) {
	cases := map[string]llm.Message{
		"user":          userMsg("please refactor the session manager so that it keeps one queue per thread"),
		"toolCallRead":  toolCallMsg("read", `{"path":"packages/coding-agent/src/core/session-manager.ts","offset":120,"limit":200}`),
		"toolCallWrite": toolCallMsg("write", fmt.Sprintf(`{"path":"a.go","content":%q}`, bytes.Repeat([]byte("func f() {}\n"), 400))),
		"toolResult4KB": toolResultMsg(string(bytes.Repeat([]byte("line of output\n"), 270))),
	}
	for name, m := range cases {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				EstimateTokens(m)
			}
		})
	}
}

// BenchmarkLoadPiSession reads the 2.3 MB fixture file.
func BenchmarkLoadPiSession(b *testing.B) { benchLoad(b, fixtureBytes(b)) }

// fixtureBytes returns the fixture session file.
func fixtureBytes(b *testing.B) []byte {
	data, err := os.ReadFile("testdata/before-compaction.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// benchLoad times LoadPiSession of data from a bytes.Reader.
func benchLoad(b *testing.B, data []byte) {
	benchLoads(b, data, nil, func() error {
		_, err := LoadPiSession(bytes.NewReader(data))
		return err
	})
}

// benchLoads times load, a load of data, after prepare (if not nil) with
// the clock stopped. Next to the mean (ns/op) it reports the median load
// (median-ms), the figure pi's anchor gives for its loads (load_median_ms):
// a load that a collection lands in lifts the mean, not the median.
func benchLoads(b *testing.B, data []byte, prepare func(), load func() error) {
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var times []time.Duration
	for b.Loop() {
		if prepare != nil {
			b.StopTimer()
			prepare()
			b.StartTimer()
		}
		t := time.Now()
		if err := load(); err != nil {
			b.Fatal(err)
		}
		times = append(times, time.Since(t))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2])/1e6, "median-ms")
}

// BenchmarkParsePiSession parses the fixture already in memory, the
// operation pi's anchor times as its load (parseSessionEntries of the file's
// text, read before the clock starts).
func BenchmarkParsePiSession(b *testing.B) { benchParse(b, fixtureBytes(b)) }

// benchParse times ParsePiSession of data. ParsePiSession takes the bytes it
// parses, so each parse gets a fresh copy in one buffer, made with the clock
// stopped, as pi's text is in memory before its clock starts.
func benchParse(b *testing.B, data []byte) {
	buf := make([]byte, len(data))
	benchLoads(b, data, func() { copy(buf, data) }, func() error {
		_, err := ParsePiSession(buf)
		return err
	})
}

// BenchmarkArgumentsLength compares the length-only scanner EstimateTokens uses
// with building the JSON.stringify text and measuring it (the baseline).
func BenchmarkArgumentsLength(b *testing.B) {
	args := []byte(fmt.Sprintf(`{"path":"a.go","content":%q}`, bytes.Repeat([]byte("func f() {}\n"), 400)))
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(len(args)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsLen(args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("serialize", func(b *testing.B) {
		b.SetBytes(int64(len(args)))
		b.ReportAllocs()
		for b.Loop() {
			s, err := jsStringify(args)
			if err != nil {
				b.Fatal(err)
			}
			_ = utf16Len(s)
		}
	})
}

// BenchmarkFindCutPoint finds the cut over the whole fixture at
// keepRecentTokens 20000, as pi's anchor script does.
func BenchmarkFindCutPoint(b *testing.B) {
	entries := loadFixture(b)
	b.ReportAllocs()
	for b.Loop() {
		if cp := FindCutPoint(entries, 0, len(entries), 20000); cp.FirstKeptIndex != 946 {
			b.Fatalf("cut at %d, want 946", cp.FirstKeptIndex)
		}
	}
}

// session5000 is the generated 5,000-entry session (internal/sessiongen) as
// a pi file, the one pi's anchor script reads in the same run.
var session5000 = sync.OnceValue(func() []byte {
	var b bytes.Buffer
	if err := sessiongen.WritePi(&b, sessiongen.Entries(7, 5000)); err != nil {
		panic(err)
	}
	return b.Bytes()
})

// BenchmarkSession5000 is pi's anchor on the generated session: load, every
// estimate, the cut at 20000 and Prepare with the defaults.
func BenchmarkSession5000(b *testing.B) {
	data := session5000()
	entries, err := LoadPiSession(bytes.NewReader(data))
	if err != nil || len(entries) != 5000 {
		b.Fatalf("LoadPiSession = %d entries, %v", len(entries), err)
	}
	b.Run("LoadPiSession", func(b *testing.B) { benchLoad(b, data) })
	b.Run("ParsePiSession", func(b *testing.B) { benchParse(b, data) })
	b.Run("EstimateTokens", func(b *testing.B) {
		for b.Loop() {
			for i := range entries {
				if entries[i].Message != nil {
					EstimateTokens(*entries[i].Message)
				}
			}
		}
	})
	b.Run("FindCutPoint", func(b *testing.B) {
		for b.Loop() {
			FindCutPoint(entries, 0, len(entries), 20000)
		}
	})
	b.Run("Prepare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Prepare(entries, DefaultSettings()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
