package tools

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The benchmark tree is built once per test binary and removed by TestMain.
var (
	benchOnce sync.Once
	benchDir  string
	benchErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

var benchWords = strings.Fields(`request response server client handler config session token cache index
	buffer reader writer stream parser lexer node tree graph queue worker pool job task event message
	channel context deadline timeout retry backoff limit quota metric counter gauge trace span user
	account project branch commit review status result error value key entry record table column`)

func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// sourceFile returns a Go-like source file of n functions.
func sourceFile(rng *rand.Rand, pkg string, n int) string {
	w := func() string { return benchWords[rng.IntN(len(benchWords))] }
	var b strings.Builder
	fmt.Fprintf(&b, "// Package %s handles %s %s for the %s.\npackage %s\n\nimport (\n\t\"context\"\n\t\"errors\"\n\t\"fmt\"\n\t\"strings\"\n)\n\n", pkg, w(), w(), w(), pkg)
	if rng.IntN(40) == 0 {
		b.WriteString("var ErrNotFound = errors.New(\"not found\")\n\n")
	}
	for range n {
		name := title(w()) + title(w())
		if rng.IntN(8) == 0 {
			name += "Handler"
		}
		recv := title(w())
		fmt.Fprintf(&b, "// %s turns a %s into a %s, honouring the %s %s.\n", name, w(), w(), w(), w())
		fmt.Fprintf(&b, "func (s *%s) %s(ctx context.Context, %s string, %s int) (string, error) {\n", recv, name, w(), w())
		for range 3 + rng.IntN(12) {
			switch rng.IntN(5) {
			case 0:
				fmt.Fprintf(&b, "\tif %s > %d {\n\t\treturn \"\", fmt.Errorf(\"%s %s: %%w\", errors.ErrUnsupported)\n\t}\n", w(), rng.IntN(10000), w(), w())
			case 1:
				fmt.Fprintf(&b, "\t%s := strings.Repeat(%q, %d)\n", w()+"Value", w(), rng.IntN(64))
			case 2:
				fmt.Fprintf(&b, "\t// TODO(%s): %s the %s before the %s.\n", w(), w(), w(), w())
			case 3:
				fmt.Fprintf(&b, "\tfor i := 0; i < len(%s); i++ {\n\t\ts.%s[i] = %s(ctx, i)\n\t}\n", w(), w(), title(w()))
			default:
				fmt.Fprintf(&b, "\tif err := s.%s.%s(ctx); err != nil {\n\t\treturn \"\", err\n\t}\n", w(), title(w()))
			}
		}
		fmt.Fprintf(&b, "\treturn %q, nil\n}\n\n", w())
	}
	return b.String()
}

// benchTree builds a committed repository of 4,000 Go-like files in 200
// folders three levels deep (~17 MB), with a .gitignore and ignored files.
func benchTree(b testing.TB) string {
	benchOnce.Do(func() {
		benchDir, benchErr = os.MkdirTemp("", "tools-bench-")
		if benchErr != nil {
			return
		}
		root := filepath.Join(benchDir, "repo")
		rng := rand.New(rand.NewPCG(4, 2))
		for i := range 4000 {
			dir := filepath.Join(root, fmt.Sprintf("pkg%d", i%10), fmt.Sprintf("mod%d", i%40), fmt.Sprintf("part%d", i%200))
			if i < 200 {
				if benchErr = os.MkdirAll(dir, 0o755); benchErr != nil {
					return
				}
			}
			name := fmt.Sprintf("%s_%d.go", benchWords[i%len(benchWords)], i)
			if benchErr = os.WriteFile(filepath.Join(dir, name), []byte(sourceFile(rng, fmt.Sprintf("part%d", i%200), 3+rng.IntN(15))), 0o644); benchErr != nil {
				return
			}
		}
		os.WriteFile(filepath.Join(root, ".gitignore"), []byte("*.tmp\nnode_modules/\n"), 0o644)
		os.MkdirAll(filepath.Join(root, "node_modules", "dep"), 0o755)
		for i := range 50 {
			os.WriteFile(filepath.Join(root, "node_modules", "dep", fmt.Sprintf("f%d.js", i)), []byte("var ErrNotFound = 1\n"), 0o644)
		}
		gitCommitAll(b, root)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return filepath.Join(benchDir, "repo")
}

func benchWorkspace(b *testing.B, root string) *Workspace {
	ws, err := NewWorkspace(WorkspaceConfig{Root: root, Scratch: filepath.Join(b.TempDir(), "scratch")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ws.Close() })
	return ws
}

// BenchmarkGrep compares the grep tool with `git grep` on the same tree in
// the same run. Every search scans the whole tree (no early stop).
func BenchmarkGrep(b *testing.B) {
	root := benchTree(b)
	g := NewGrepTool(benchWorkspace(b, root))
	for _, q := range []struct {
		name    string
		args    map[string]any
		gitArgs []string
	}{
		{"absent", map[string]any{"pattern": "zqzqzqzq", "literal": true}, []string{"-F", "-e", "zqzqzqzq"}},
		{"literal", map[string]any{"pattern": "ErrNotFound", "literal": true}, []string{"-F", "-e", "ErrNotFound"}},
		{"regex", map[string]any{"pattern": `func \(s \*\w+\) \w+Handler\(`}, []string{"-E", "-e", `func \(s \*[a-zA-Z0-9_]+\) [a-zA-Z0-9_]+Handler\(`}},
		{"ignorecase", map[string]any{"pattern": "errnotfound", "ignoreCase": true}, []string{"-i", "-F", "-e", "errnotfound"}},
		{"regex-no-literal", map[string]any{"pattern": `[0-9]{4} \{`}, []string{"-E", "-e", `[0-9]{4} \{`}},
	} {
		q.args["limit"] = 1 << 30
		var tool, git int
		b.Run(q.name+"/tool", func(b *testing.B) {
			start := selfCPU()
			for b.Loop() {
				var d GrepDetails
				json.Unmarshal(call(b, g, q.args).Details, &d)
				tool = d.Matches
			}
			b.ReportMetric(float64(selfCPU()-start)/float64(b.N)/1e6, "cpu-ms/op")
		})
		b.Run(q.name+"/git-grep", func(b *testing.B) {
			var cpu time.Duration
			for b.Loop() {
				cmd := exec.Command("git", append([]string{"grep", "-n", "--no-color"}, q.gitArgs...)...)
				cmd.Dir = root
				out, _ := cmd.Output()
				git = strings.Count(string(out), "\n")
				cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			}
			b.ReportMetric(float64(cpu)/float64(b.N)/1e6, "cpu-ms/op")
		})
		if tool != git {
			b.Errorf("%s: tool found %d lines, git grep %d", q.name, tool, git)
		}
	}
}

// selfCPU is the CPU time (user and system) this process has used: less
// sensitive than wall time to other work on a shared machine.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkFind(b *testing.B) {
	root := benchTree(b)
	f := NewFindTool(benchWorkspace(b, root))
	for _, q := range []struct{ name, pattern string }{{"by-name", "*_1?.go"}, {"double-star", "pkg3/**/part1*/*.go"}} {
		b.Run(q.name, func(b *testing.B) {
			for b.Loop() {
				call(b, f, map[string]any{"pattern": q.pattern, "limit": 1 << 30})
			}
		})
	}
	b.Run("git-ls-files", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("git", "ls-files", "*_1?.go")
			cmd.Dir = root
			cmd.Stdout = io.Discard
			cmd.Run()
		}
	})
}

// BenchmarkRead50MB reads 100 lines from the middle of a 50 MB file: one
// streaming pass; B/op is what the read allocates.
func BenchmarkRead50MB(b *testing.B) {
	dir := b.TempDir()
	writeBigFile(b, filepath.Join(dir, "big.log"), 50<<20)
	ws := benchWorkspace(b, dir)
	rd := NewReadTool(ws, NewReadTracker())
	b.SetBytes(50 << 20)
	b.ReportAllocs()
	for b.Loop() {
		res := call(b, rd, map[string]any{"path": "big.log", "offset": 300000, "limit": 100})
		if res.IsError {
			b.Fatal(textOf(res))
		}
	}
}
