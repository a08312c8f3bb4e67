package compaction

import (
	"bytes"
	"fmt"
	"testing"

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
			_ = llm.UTF16Len(s)
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

// BenchmarkSession5000 is pi's anchor on the generated 5,000-entry session
// (internal/sessiongen; THREADSMITH_PI_SESSION_OUT writes it for pi): every
// estimate, the cut at 20000 and Prepare with the defaults.
func BenchmarkSession5000(b *testing.B) {
	entries := sessiongen.Entries(7, 5000)
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

// BenchmarkEstimateTokensShapes estimates every message of generated 2 MB
// sessions, ASCII code and half non-ASCII prose; ns/B is the cost per byte of
// text.
func BenchmarkEstimateTokensShapes(b *testing.B) {
	for _, sh := range []struct {
		name     string
		nonASCII bool
	}{{"ascii", false}, {"nonascii", true}} {
		entries := sessiongen.Generate(1, sessiongen.Shape{Bytes: 2_000_000, NonASCII: sh.nonASCII})
		b.Run(sh.name, func(b *testing.B) {
			for b.Loop() {
				for i := range entries {
					if entries[i].Message != nil {
						EstimateTokens(*entries[i].Message)
					}
				}
			}
		})
	}
}
