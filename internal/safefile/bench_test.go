package safefile

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadFile reads a 4 KB file three folders down, as the bot reads
// a skill: through openat2, through the per-component walk, and with a plain
// os.ReadFile (which follows anything) for the baseline.
func BenchmarkReadFile(b *testing.B) {
	root := b.TempDir()
	name := ".threadsmith/skills/deploy/SKILL.md"
	if err := os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, name), make([]byte, 4<<10), 0o644); err != nil {
		b.Fatal(err)
	}
	r, err := OpenRoot(root, "the worktree")
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	for _, c := range []struct {
		name string
		walk bool
	}{{"openat2", false}, {"walk", true}} {
		b.Run(c.name, func(b *testing.B) {
			noOpenat2.Store(c.walk)
			defer noOpenat2.Store(false)
			for b.Loop() {
				if _, err := r.ReadFile(name, 64<<10); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("os.ReadFile", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.ReadFile(filepath.Join(root, name)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
