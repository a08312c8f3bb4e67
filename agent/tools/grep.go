package tools

import (
	"bytes"
	"context"
	_ "embed"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/tools/truncate"
)

// GrepName is the grep tool's name.
const GrepName = "grep"

const (
	// maxGrepFileBytes skips files too big to read whole (logs, dumps); the
	// result says how many were skipped.
	maxGrepFileBytes = 16 << 20
	// binarySniff is how much of a file is checked for NUL bytes, as git does.
	binarySniff = 8 << 10
	maxContext  = 20
)

//go:embed grep.md
var grepDescription string

type grepParams struct {
	Pattern    string `json:"pattern" required:"true" desc:"Regular expression (Go RE2 syntax), or plain text with literal=true"`
	Path       string `json:"path" desc:"Folder or file to search (default: the workspace root)"`
	Glob       string `json:"glob" desc:"Only files matching this glob, e.g. '*.go', '*.{ts,tsx}' or 'src/**/*_test.go'"`
	IgnoreCase bool   `json:"ignoreCase" desc:"Case-insensitive search (default false)"`
	Literal    bool   `json:"literal" desc:"Treat pattern as plain text, not a regular expression (default false)"`
	Context    *int   `json:"context" desc:"Lines to show before and after each match (default 0)"`
	Limit      *int   `json:"limit" desc:"Maximum number of matching lines (default 100)"`
}

// GrepDetails are the machine-readable facts of a grep result.
type GrepDetails struct {
	Matches         int              `json:"matches"`
	LimitReached    bool             `json:"limitReached,omitempty"`
	LinesCut        bool             `json:"linesCut,omitempty"`
	SkippedTooLarge int              `json:"skippedTooLarge,omitempty"`
	Truncation      *truncate.Result `json:"truncation,omitempty"`
}

// GrepTool searches file contents in pure Go, honouring .gitignore.
type GrepTool struct {
	ws      *Workspace
	workers int
	spec    llm.ToolSpec
}

var _ agent.ReadOnlyTool = (*GrepTool)(nil)

// NewGrepTool returns the grep tool of ws.
func NewGrepTool(ws *Workspace) *GrepTool {
	return &GrepTool{ws: ws, workers: min(max(runtime.GOMAXPROCS(0), 4), 16), spec: newSpec(GrepName, grepDescription, ws, grepParams{})}
}

func (t *GrepTool) Spec() llm.ToolSpec { return t.spec }

func (t *GrepTool) ReadOnly() bool { return true }

func (t *GrepTool) Execute(ctx context.Context, call agent.ToolCall, _ func(agent.ToolResult)) (agent.ToolResult, error) {
	var p grepParams
	if err := decodeArgs(GrepName, call.Args, &p); err != nil {
		return errorResult(err), nil
	}
	if p.Pattern == "" {
		return agent.ErrorResult("pattern is required"), nil
	}
	limit := GrepLimit
	if p.Limit != nil && *p.Limit > 0 {
		limit = *p.Limit
	}
	contextLines := 0
	if p.Context != nil && *p.Context > 0 {
		contextLines = min(*p.Context, maxContext)
	}
	q, err := compileGrep(p.Pattern, p.Literal, p.IgnoreCase)
	if err != nil {
		return agent.ErrorResult(err.Error()), nil
	}
	var g *glob
	if p.Glob != "" {
		if g, err = compileGlob(p.Glob); err != nil {
			return agent.ErrorResult(err.Error()), nil
		}
	}
	tg, err := t.ws.resolve(p.Path)
	if err != nil {
		return errorResult(err), nil
	}
	fi, err := tg.area.fs.Stat(tg.rel)
	if err != nil {
		return agent.ErrorResult("path " + quoted(p.Path) + ": " + describeFSError(err)), nil
	}
	s := &grepSearch{q: q, glob: g, limit: limit, context: contextLines}
	if fi.IsDir() {
		err = s.tree(ctx, tg, t.workers)
	} else {
		err = s.file(ctx, tg)
	}
	if ctx.Err() != nil {
		return agent.ErrorResult("grep aborted"), nil
	}
	if err != nil {
		return errorResult(err), nil
	}
	return s.result(), nil
}

// grepMatch is one matching line with the lines around it.
type grepMatch struct {
	line  int      // 1-based
	from  int      // line number of text[0]
	text  []string // lines from..line+context, cut to MaxLineChars
	isCut bool
}

type grepFile struct {
	display string
	matches []grepMatch
	tooBig  bool
}

// grepSearch runs one search and gathers its results in walk order.
type grepSearch struct {
	q       *grepQuery
	glob    *glob
	limit   int
	context int

	files    []grepFile // in walk order, only files with matches
	matches  int
	tooLarge int
}

type grepJob struct {
	seq     int
	dir     *dirHandle
	name    string
	display string
}

type grepDone struct {
	seq  int
	file grepFile
}

// tree searches a folder with a pool of workers. Files get sequence numbers in
// walk order; results are taken in that order, so the answer is deterministic,
// and the walk stops as soon as the first files hold enough matches.
func (s *grepSearch) tree(ctx context.Context, tg target, workers int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := make(chan grepJob, 256)
	done := make(chan grepDone, 256)
	var walkErr error
	go func() {
		defer close(jobs)
		seq := 0
		base := tg.rel
		walkErr = walkTree(ctx, tg, func(e walkEntry) bool {
			if e.isDir {
				return s.glob == nil || s.glob.descend(relTo(base, e.rel))
			}
			if s.glob != nil && !s.glob.match(relTo(base, e.rel), false) {
				return false
			}
			select {
			case jobs <- grepJob{seq: seq, dir: e.dir.acquire(), name: e.name, display: target{tg.area, e.rel}.display()}:
				seq++
			case <-ctx.Done():
				e.dir.release()
			}
			return false
		})
	}()
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var buf, lower []byte
			for j := range jobs {
				var f grepFile
				if ctx.Err() == nil {
					f, buf, lower = s.search(j, buf, lower)
				}
				j.dir.release()
				done <- grepDone{seq: j.seq, file: f}
			}
		})
	}
	go func() { wg.Wait(); close(done) }()

	pending := map[int]grepFile{}
	next := 0
	for d := range done {
		pending[d.seq] = d.file
		for {
			f, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			if s.take(f) {
				cancel()
			}
		}
	}
	if walkErr != nil && ctx.Err() == nil {
		return walkErr
	}
	return nil
}

// take adds a file's results; it reports whether the limit is reached.
func (s *grepSearch) take(f grepFile) bool {
	if s.matches >= s.limit {
		return true
	}
	if f.tooBig {
		s.tooLarge++
	}
	if len(f.matches) == 0 {
		return false
	}
	if room := s.limit - s.matches; len(f.matches) > room {
		f.matches = f.matches[:room]
	}
	s.files = append(s.files, f)
	s.matches += len(f.matches)
	return s.matches >= s.limit
}

// file searches one file named by the model (ignore rules do not apply).
func (s *grepSearch) file(ctx context.Context, tg target) error {
	dir, name := ".", tg.rel
	if i := strings.LastIndexByte(tg.rel, '/'); i >= 0 {
		dir, name = tg.rel[:i], tg.rel[i+1:]
	}
	f, err := tg.area.fs.Open(dir)
	if err != nil {
		return &pathError{"cannot open " + quoted(tg.display()) + ": " + describeFSError(err)}
	}
	h := newDirHandle(f)
	defer h.release()
	res, _, _ := s.search(grepJob{dir: h, name: name, display: tg.display()}, nil, nil)
	s.take(res)
	return ctx.Err()
}

// search reads one file whole and collects its matches (at most the limit).
// buf and lower are the worker's reusable buffers.
func (s *grepSearch) search(j grepJob, buf, lower []byte) (grepFile, []byte, []byte) {
	res := grepFile{display: j.display}
	data, buf, tooBig, err := j.dir.readFile(j.name, buf, maxGrepFileBytes)
	if err != nil {
		return res, buf, lower
	}
	if tooBig {
		res.tooBig = true
		return res, buf, lower
	}
	if bytes.IndexByte(data[:min(len(data), binarySniff)], 0) >= 0 {
		return res, buf, lower
	}
	if s.q.fold {
		if cap(lower) < len(data) {
			lower = make([]byte, len(data), cap(buf))
		}
		lower = lower[:len(data)]
		asciiLower(lower, data)
	}
	lineNo, at := 1, 0
	s.q.lines(data, lower, func(start, end int) bool {
		lineNo += bytes.Count(data[at:start], []byte{'\n'})
		at = start
		m := grepMatch{line: lineNo, from: lineNo}
		first := start
		for k := 0; k < s.context && first > 0; k++ {
			first = bytes.LastIndexByte(data[:first-1], '\n') + 1
			m.from--
		}
		last := end
		for k := 0; k < s.context && last+1 < len(data); k++ {
			last = lineEnd(data, last+1)
		}
		for _, l := range strings.Split(string(data[first:last]), "\n") {
			l = strings.ToValidUTF8(strings.TrimSuffix(l, "\r"), "\uFFFD")
			l, cut := truncate.Line(l, truncate.MaxLineChars)
			m.isCut = m.isCut || cut
			m.text = append(m.text, l)
		}
		res.matches = append(res.matches, m)
		return len(res.matches) < s.limit
	})
	return res, buf, lower
}

// relTo is rel relative to base (both canonical slash paths, rel inside base).
func relTo(base, rel string) string {
	if base == "." {
		return rel
	}
	return strings.TrimPrefix(rel, base+"/")
}

func (s *grepSearch) result() agent.ToolResult {
	details := GrepDetails{Matches: s.matches, SkippedTooLarge: s.tooLarge}
	var out []string
	for _, f := range s.files {
		isMatch := map[int]bool{}
		for _, m := range f.matches {
			isMatch[m.line] = true
		}
		printed := 0 // last line number printed for this file
		for _, m := range f.matches {
			details.LinesCut = details.LinesCut || m.isCut
			for i, text := range m.text {
				n := m.from + i
				if n <= printed {
					continue
				}
				if s.context > 0 && printed > 0 && n > printed+1 {
					out = append(out, "--")
				}
				sep := "-"
				if isMatch[n] {
					sep = ":"
				}
				out = append(out, f.display+sep+strconv.Itoa(n)+sep+" "+text)
				printed = n
			}
		}
	}
	var notices []string
	if s.matches >= s.limit {
		details.LimitReached = true
		notices = append(notices, fmt.Sprintf("%d matching lines shown, the limit; there may be more. Use limit=%d or a narrower pattern, path or glob", s.limit, s.limit*2))
	}
	text := strings.Join(out, "\n")
	if tr := truncate.Head(text, truncate.Limits{MaxLines: int(^uint(0) >> 1)}); tr.Truncated {
		text = tr.Content
		details.Truncation = &tr
		notices = append(notices, fmt.Sprintf("output cut at %s", truncate.FormatSize(truncate.MaxBytes)))
	}
	if details.LinesCut {
		notices = append(notices, fmt.Sprintf("some lines were cut to %d characters; read the file to see them whole", truncate.MaxLineChars))
	}
	if s.tooLarge > 0 {
		notices = append(notices, fmt.Sprintf("%d file(s) over %s were not searched", s.tooLarge, truncate.FormatSize(maxGrepFileBytes)))
	}
	if s.matches == 0 {
		text = "No matches found."
	}
	if len(notices) > 0 {
		text += "\n\n[" + strings.Join(notices, ". ") + ".]"
	}
	return withDetails(agent.TextResult(text), details)
}
