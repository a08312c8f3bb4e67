package tools

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/tools/truncate"
)

func numberedLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "line %d", i)
	}
	return b.String()
}

var pngHeader = "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"

func TestReadGolden(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	writeTree(t, tw.root, map[string]string{
		"small.txt":    "alpha\nbeta\ngamma\n",
		"crlf.txt":     "one\r\ntwo\r\n",
		"3000.txt":     numberedLines(3000),
		"wide.txt":     strings.Repeat(strings.Repeat("x", 99)+"\n", 1000),
		"longline.txt": "short\n" + strings.Repeat("y", 60*1024) + "\nafter\n",
		"empty.txt":    "",
		"pic.png":      pngHeader,
		"blob.bin":     "ab\x00cd",
		"dir/x.txt":    "x",
	})
	if err := os.WriteFile(filepath.Join(tw.Scratch(), "note.txt"), []byte("from the scratch folder\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rd := NewReadTool(tw.Workspace, tw.files)
	var cases []goldenCase
	add := func(name string, args map[string]any) {
		cases = append(cases, goldenCase{name, call(t, rd, args)})
	}
	add("small file", map[string]any{"path": "small.txt"})
	add("absolute path inside the root", map[string]any{"path": filepath.Join(tw.root, "small.txt")})
	add("offset and limit", map[string]any{"path": "small.txt", "offset": 2, "limit": 1})
	add("crlf kept", map[string]any{"path": "crlf.txt"})
	add("continue to the end", map[string]any{"path": "3000.txt", "offset": 2996})
	add("offset past the end", map[string]any{"path": "3000.txt", "offset": 3001})
	add("line too long", map[string]any{"path": "longline.txt", "offset": 2})
	add("empty file", map[string]any{"path": "empty.txt"})
	add("image", map[string]any{"path": "pic.png"})
	add("binary", map[string]any{"path": "blob.bin"})
	add("directory", map[string]any{"path": "dir"})
	add("missing", map[string]any{"path": "nope.txt"})
	add("scratch file by absolute path", map[string]any{"path": filepath.Join(tw.Scratch(), "note.txt")})
	add("zero limit", map[string]any{"path": "small.txt", "limit": 0})
	checkGolden(t, "read", tw, cases)

	// The long cases: their facts instead of golden copies.
	res := call(t, rd, map[string]any{"path": "3000.txt", "offset": 900})
	if got := textOf(res); !strings.HasPrefix(got, "line 900\n") || !strings.HasSuffix(got, "\nline 2899\n\n[Lines 900-2899 of 3000 shown. Continue with offset=2900.]") {
		t.Errorf("got %.20q…%q, want lines 900-2899 and the continue note", got, got[len(got)-80:])
	}
	res = call(t, rd, map[string]any{"path": "wide.txt"})
	got := textOf(res)
	body, note, _ := strings.Cut(got, "\n\n[")
	if len(body) != 51199 || note != "Lines 1-512 of 1001 shown (50.0KB limit). Continue with offset=513.]" {
		t.Errorf("got %d bytes and note %q, want 51199 bytes and the 50KB note", len(body), note)
	}
}

func TestReadImageIsImageContent(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	rd := NewReadTool(tw.Workspace, tw.files)
	for name, head := range map[string]string{
		"a.png": pngHeader, "b.jpg": "\xff\xd8\xff\xe0JFIF", "c.gif": "GIF89a....", "d.webp": "RIFF\x10\x00\x00\x00WEBPVP8 ",
	} {
		writeTree(t, tw.root, map[string]string{name: head})
		res := call(t, rd, map[string]any{"path": name})
		if len(res.Content) != 2 || res.Content[1].Type != llm.ContentImage {
			t.Fatalf("%s: got %+v, want a text and an image block", name, res.Content)
		}
		data, _ := base64.StdEncoding.DecodeString(res.Content[1].Data)
		if string(data) != head {
			t.Errorf("%s: image data %q, want %q", name, data, head)
		}
	}
}

func TestReadRecordsForEdit(t *testing.T) {
	tw := newTestWorkspace(t, WorkspaceConfig{})
	writeTree(t, tw.root, map[string]string{"f.txt": numberedLines(10)})
	rd := NewReadTool(tw.Workspace, tw.files)
	call(t, rd, map[string]any{"path": "f.txt", "offset": 5, "limit": 1})
	st, ok := tw.files.lookup(filepath.Join(tw.root, "f.txt"))
	if !ok || st.size != int64(len(numberedLines(10))) {
		t.Fatalf("got stamp %+v ok=%v, want the whole file's size recorded after a partial read", st, ok)
	}
}

// readLines must cut exactly as truncate.Head on the selected lines, for
// every offset and limit, whatever the line lengths.
func TestReadLinesAgreesWithHead(t *testing.T) {
	lim := truncate.Limits{MaxLines: 7, MaxBytes: 40}
	texts := []string{"", "\n", "a", "a\n", "a\nb", strings.Repeat("abcdefghij\n", 12), "x\n" + strings.Repeat("z", 45) + "\ny\n", strings.Repeat("12345678\n", 3) + strings.Repeat("q", 41)}
	for _, text := range texts {
		all := strings.Split(text, "\n")
		for start := range len(all) {
			for _, limit := range []int{-1, 1, 2, 5, 10} {
				end := len(all)
				if limit >= 0 {
					end = min(start+limit, len(all))
				}
				want := truncate.Head(strings.Join(all[start:end], "\n"), lim)
				got, err := readLines(context.Background(), bufio.NewReaderSize(strings.NewReader(text), 16), start, limit, lim)
				if err != nil {
					t.Fatal(err)
				}
				if string(got.text) != want.Content || got.trunc.Truncated != want.Truncated || got.trunc.By != want.By ||
					got.trunc.OutputLines != want.OutputLines || got.trunc.FirstLineTooLong != want.FirstLineTooLong || got.totalLines != len(all) {
					t.Fatalf("text %q start %d limit %d: got %q %+v lines %d, want %q %+v lines %d",
						text, start, limit, got.text, got.trunc, got.totalLines, want.Content, want, len(all))
				}
			}
		}
	}
}

// A 50 MB file is read in one streaming pass: the kept text plus a buffer,
// not the file.
func TestReadLargeFileBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 50 MB")
	}
	tw := newTestWorkspace(t, WorkspaceConfig{})
	p := filepath.Join(tw.root, "big.log")
	writeBigFile(t, p, 50<<20)
	rd := NewReadTool(tw.Workspace, tw.files)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := call(t, rd, map[string]any{"path": "big.log", "offset": 400000, "limit": 3})
	runtime.ReadMemStats(&after)
	if got := textOf(res); !strings.HasPrefix(got, "entry 0399999 ") || !strings.Contains(got, "Continue with offset=400003.") {
		t.Fatalf("got %.200q, want lines from entry 399999 and a note", got)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("reading allocated %d bytes, want under 4 MB for a 50 MB file", alloc)
	}
}

// writeBigFile writes lines "entry NNNNNNN …" up to size bytes.
func writeBigFile(t testing.TB, p string, size int) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	const tail = " some log text that is long enough to look like a real log line\n"
	buf := make([]byte, 0, 4<<20)
	for i, n := 0, 0; n < size; i++ {
		start := len(buf)
		buf = append(buf, "entry "...)
		num := strconv.AppendInt(nil, int64(i), 10)
		for range 7 - len(num) {
			buf = append(buf, '0')
		}
		buf = append(append(buf, num...), tail...)
		n += len(buf) - start
		if len(buf) > 4<<20-200 {
			if _, err := f.Write(buf); err != nil {
				t.Fatal(err)
			}
			buf = buf[:0]
		}
	}
	if _, err := f.Write(buf); err != nil {
		t.Fatal(err)
	}
	f.Close()
}
