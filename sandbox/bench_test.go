package sandbox

import (
	"testing"
)

func benchRun(b *testing.B, s *Sandbox, args ...string) {
	dir := b.TempDir()
	for b.Loop() {
		p, err := s.Start(Spec{Path: args[0], Args: args, Dir: dir, Mounts: []Mount{{Path: dir, Access: ReadWrite}}})
		if err != nil {
			b.Fatal(err)
		}
		if e, err := p.Wait(); err != nil || e.Code != 0 {
			b.Fatal(e, err)
		}
	}
}

func BenchmarkTrue(b *testing.B) {
	s, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("sandboxed", func(b *testing.B) { benchRun(b, s, "/bin/true") })
	b.Run("direct", func(b *testing.B) { benchRun(b, None(), "/bin/true") })
}
