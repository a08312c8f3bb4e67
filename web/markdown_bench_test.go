package web

import (
	"fmt"
	"strings"
	"testing"
)

// largeAnswer is about size bytes of Markdown as a model writes a long
// answer: headings, paragraphs with emphasis, links and inline code, nested
// and task lists, tables, block quotes, and fenced code in Go, Python,
// shell and diff, some of it inside list items. The same seed gives the
// same text.
func largeAnswer(size int) string {
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "## Step %d: fix `parse%d`\n\n", i, i)
		fmt.Fprintf(&b, "The **parser** in `internal/parse%d.go` fails on _empty_ input; see [the docs](https://go.dev/doc/%d) "+
			"and https://example.com/issue/%d. It was ~~fine~~ broken since snake_case_name%d changed.\n"+
			"A second line of the same paragraph, with a <b>tag</b> the model wrote.\n\n", i, i, i, i)
		switch i % 6 {
		case 0:
			fmt.Fprintf(&b, "```go\n// Parse%d reads one record.\nfunc Parse%d(s string) (int, error) {\n\tif s == \"\" {\n"+
				"\t\treturn 0, errors.New(\"empty\")\n\t}\n\tn, err := strconv.Atoi(s) // %d\n\treturn n * 0x1F, err\n}\n```\n\n", i, i, i)
		case 1:
			fmt.Fprintf(&b, "| file | lines | status |\n|:-----|------:|:------:|\n")
			for r := range 8 {
				fmt.Fprintf(&b, "| `pkg/f%d_%d.go` | %d | **ok** |\n", i, r, r*37+i)
			}
			b.WriteString("\n")
		case 2:
			fmt.Fprintf(&b, "1. Run the tests:\n\n   ```sh\n   go test -race ./parse%d/... # %d\n   ```\n\n2. Then:\n"+
				"   - check the *output*\n     - nested item `%d`\n       - deeper\n   - and the log\n3. Done.\n\n", i, i, i)
		case 3:
			fmt.Fprintf(&b, "```diff\ndiff --git a/p%d.go b/p%d.go\n@@ -1,3 +1,3 @@\n func f() {\n-\tpanic(%d)\n+\treturn\n }\n```\n\n", i, i, i)
		case 4:
			fmt.Fprintf(&b, "- [x] reproduce the failure %d\n- [ ] fix it\n- [ ] add a test\n\n> **Note**: the fix keeps\n> the old API (%d).\n\n", i, i)
		case 5:
			fmt.Fprintf(&b, "```python\ndef parse_%d(s: str) -> int:\n    # the answer\n    return int(s or \"42\")\n```\n\n"+
				"![diagram](https://example.com/d%d.png) and a [bad link](javascript:alert(%d)).\n\n---\n\n", i, i, i)
		}
	}
	return b.String()
}

// BenchmarkMarkdownLargeAnswer renders one 200 KB answer of mixed Markdown
// and code (largeAnswer), as a session page renders a long reply.
func BenchmarkMarkdownLargeAnswer(b *testing.B) {
	src := largeAnswer(200 << 10)
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		if markdown(src) == "" {
			b.Fatal("nothing rendered")
		}
	}
}
