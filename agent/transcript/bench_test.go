package transcript_test

import (
	"testing"

	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/internal/sessiongen"
)

// BenchmarkBuildContext rebuilds the context of generated sessions, as
// every resume does after loading their live entries.
func BenchmarkBuildContext(b *testing.B) {
	for i, sh := range []struct {
		name  string
		shape sessiongen.Shape
	}{
		{"ascii-100KB", sessiongen.Shape{Bytes: 100_000}},
		{"nonascii-100KB", sessiongen.Shape{Bytes: 100_000, NonASCII: true}},
		{"small-calls-3MB", sessiongen.Shape{Bytes: 3_000_000, ResultMin: 40, ResultMax: 400, AnswerEvery: 12}},
	} {
		entries := sessiongen.Generate(uint64(i+1), sh.shape)
		b.Run(sh.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				transcript.BuildContext(entries)
			}
		})
	}
}
