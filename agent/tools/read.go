package tools

import (
	"bufio"
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"strings"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/tools/truncate"
)

// ReadName is the read tool's name.
const ReadName = "read"

// MaxImageBytes is the largest image read returns; model APIs refuse bigger ones.
const MaxImageBytes = 5 << 20

//go:embed read.md
var readDescription string

type readParams struct {
	Path   string `json:"path" required:"true" desc:"File to read, relative to the workspace root"`
	Offset *int   `json:"offset" desc:"Line number to start reading from (1-based)"`
	Limit  *int   `json:"limit" desc:"Maximum number of lines to read"`
}

// ReadDetails are the machine-readable facts of a read result.
type ReadDetails struct {
	Truncation *truncate.Result `json:"truncation,omitempty"`
	MimeType   string           `json:"mimeType,omitempty"`
}

// ReadTool reads text files (head-truncated, with a notice telling the next
// offset) and images. It streams: a 50 MB file costs one pass and a buffer, not
// 50 MB of memory.
type ReadTool struct {
	ws    *Workspace
	files *ReadTracker
	spec  llm.ToolSpec
}

var _ agent.ReadOnlyTool = (*ReadTool)(nil)

// NewReadTool returns the read tool of ws; reads are recorded in files.
func NewReadTool(ws *Workspace, files *ReadTracker) *ReadTool {
	return &ReadTool{ws: ws, files: files, spec: newSpec(ReadName, readDescription, ws, readParams{})}
}

func (t *ReadTool) Spec() llm.ToolSpec { return t.spec }

func (t *ReadTool) ReadOnly() bool { return true }

func (t *ReadTool) Execute(ctx context.Context, call agent.ToolCall, _ func(agent.ToolResult)) (agent.ToolResult, error) {
	var p readParams
	if err := decodeArgs(ReadName, call.Args, &p); err != nil {
		return errorResult(err), nil
	}
	if p.Path == "" {
		return agent.ErrorResult("path is required"), nil
	}
	start := 0
	if p.Offset != nil && *p.Offset > 1 {
		start = *p.Offset - 1
	}
	limit := -1
	if p.Limit != nil {
		if *p.Limit < 1 {
			return agent.ErrorResult("limit must be at least 1"), nil
		}
		limit = *p.Limit
	}
	tg, err := t.ws.resolve(p.Path)
	if err != nil {
		return errorResult(err), nil
	}
	f, fi, err := openRegular(tg, p.Path)
	if err != nil {
		return errorResult(err), nil
	}
	defer f.Close()

	br := bufio.NewReaderSize(f, 64<<10)
	head, _ := br.Peek(8 << 10)
	if mime := imageType(head); mime != "" {
		if fi.Size() > MaxImageBytes {
			return agent.ErrorResult(fmt.Sprintf("%s is a %s image of %s; images over %s are not sent to the model. Make a smaller copy with bash and read that.",
				p.Path, mime, truncate.FormatSize(fi.Size()), truncate.FormatSize(MaxImageBytes))), nil
		}
		data, err := io.ReadAll(io.LimitReader(br, MaxImageBytes+1))
		if err != nil {
			return agent.ErrorResult("cannot read " + quoted(p.Path) + ": " + describeFSError(err)), nil
		}
		t.files.record(tg.abs(), stampOf(data, fi.ModTime()))
		res := agent.ToolResult{Content: []llm.Content{
			llm.Text(fmt.Sprintf("Image %s [%s, %s]", p.Path, mime, truncate.FormatSize(int64(len(data))))),
			llm.Image(mime, base64.StdEncoding.EncodeToString(data)),
		}}
		return withDetails(res, ReadDetails{MimeType: mime}), nil
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return agent.ErrorResult(fmt.Sprintf("%s looks binary (%s, NUL bytes in the first 8KB); read shows text only. Inspect it with bash, e.g. `xxd %s | head`.",
			p.Path, truncate.FormatSize(fi.Size()), shellQuote(p.Path))), nil
	}

	out, err := readLines(ctx, br, start, limit, truncate.Limits{})
	if err != nil {
		if ctx.Err() != nil {
			return agent.ErrorResult("read aborted"), nil
		}
		return agent.ErrorResult("cannot read " + quoted(p.Path) + ": " + describeFSError(err)), nil
	}
	t.files.record(tg.abs(), fileStamp{size: out.size, mtime: fi.ModTime(), sum: out.sum})
	if start >= out.totalLines {
		return agent.ErrorResult(fmt.Sprintf("offset %d is past the end of %s (%d lines)", start+1, p.Path, out.totalLines)), nil
	}
	return out.result(p.Path, start, limit), nil
}

// lineRead is what readLines found: the kept text and the facts for a notice.
type lineRead struct {
	text       []byte
	totalLines int // lines in the whole file ("\n" count + 1, as pi)
	trunc      truncate.Result
	firstLen   int64 // length of the first selected line
	size       int64 // bytes in the file
	sum        uint64
}

// readLines streams r and keeps the lines from start (0-based) on, at most limit
// of them (limit < 0: no limit), cut as truncate.Head would cut the joined
// selection. Memory stays within the byte limit whatever the file holds: a line
// is only buffered while it may still fit.
func readLines(ctx context.Context, r *bufio.Reader, start, limit int, lim truncate.Limits) (lineRead, error) {
	lim = truncate.Limits{MaxLines: max(lim.MaxLines, 0), MaxBytes: max(lim.MaxBytes, 0)}
	if lim.MaxLines == 0 {
		lim.MaxLines = truncate.MaxLines
	}
	if lim.MaxBytes == 0 {
		lim.MaxBytes = truncate.MaxBytes
	}
	var (
		out        lineRead
		line       = 0    // index of the current line
		lineLen    int64  // bytes of the current line so far
		collecting = true // still taking lines
		kept       = 0    // selected lines taken
		selected   = 0    // selected lines seen (complete)
		selBytes   int64  // bytes of the selection joined
		pending    []byte // the current line, while it may fit
		fits       = true // pending holds the whole current line
		chunks     = 0
	)
	inSel := func(i int) bool { return i >= start && (limit < 0 || i < start+limit) }
	endLine := func() {
		if inSel(line) {
			if selected == 0 {
				out.firstLen = lineLen
			} else {
				selBytes++
			}
			selBytes += lineLen
			if collecting {
				add := lineLen
				if kept > 0 {
					add++
				}
				switch {
				case kept >= lim.MaxLines:
					collecting = false
					out.trunc.By = truncate.ByLines
				case !fits || int64(len(out.text))+add > int64(lim.MaxBytes):
					collecting = false
					out.trunc.By = truncate.ByBytes
					if kept == 0 {
						out.trunc.FirstLineTooLong = true
					}
				default:
					if kept > 0 {
						out.text = append(out.text, '\n')
					}
					out.text = append(out.text, pending...)
					kept++
				}
			}
			selected++
		}
		line++
		lineLen, pending, fits = 0, pending[:0], true
	}
	for {
		chunk, err := r.ReadSlice('\n')
		if len(chunk) > 0 {
			out.size += int64(len(chunk))
			out.sum = crc64.Update(out.sum, crcTable, chunk)
			body := chunk
			nl := body[len(body)-1] == '\n'
			if nl {
				body = body[:len(body)-1]
			}
			lineLen += int64(len(body))
			if collecting && inSel(line) && fits {
				room := int64(lim.MaxBytes) - int64(len(out.text))
				if int64(len(pending))+int64(len(body)) <= room {
					pending = append(pending, body...)
				} else {
					fits = false
					pending = pending[:0]
				}
			}
			if nl {
				endLine()
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return out, err
		}
		if chunks++; chunks%256 == 0 {
			if err := ctx.Err(); err != nil {
				return out, err
			}
		}
	}
	endLine() // the text after the last newline is a line, even when empty
	out.totalLines = line
	out.trunc.TotalLines = selected
	out.trunc.TotalBytes = int(selBytes)
	out.trunc.OutputLines = kept
	out.trunc.OutputBytes = len(out.text)
	out.trunc.MaxLines, out.trunc.MaxBytes = lim.MaxLines, lim.MaxBytes
	out.trunc.Truncated = out.trunc.By != truncate.ByNone
	if !out.trunc.Truncated {
		out.trunc.By = truncate.ByNone
	}
	return out, nil
}

func (o lineRead) result(path string, start, limit int) agent.ToolResult {
	first := start + 1
	last := start + o.trunc.OutputLines
	text := strings.ToValidUTF8(string(o.text), "\uFFFD")
	var details ReadDetails
	switch {
	case o.trunc.FirstLineTooLong:
		text = fmt.Sprintf("[Line %d is %s, more than the %s a read returns. See part of it with bash: sed -n '%dp' %s | head -c %d]",
			first, truncate.FormatSize(o.firstLen), truncate.FormatSize(truncate.MaxBytes), first, shellQuote(path), truncate.MaxBytes)
		details.Truncation = &o.trunc
	case o.trunc.Truncated:
		limitNote := ""
		if o.trunc.By == truncate.ByBytes {
			limitNote = fmt.Sprintf(" (%s limit)", truncate.FormatSize(truncate.MaxBytes))
		}
		text += fmt.Sprintf("\n\n[Lines %d-%d of %d shown%s. Continue with offset=%d.]", first, last, o.totalLines, limitNote, last+1)
		details.Truncation = &o.trunc
	case limit >= 0 && start+limit < o.totalLines:
		text += fmt.Sprintf("\n\n[Lines %d-%d of %d shown. Continue with offset=%d.]", first, last, o.totalLines, last+1)
	case text == "":
		text = "(empty)"
	}
	return withDetails(agent.TextResult(text), details)
}

// imageType names the image format of a file from its first bytes, or "".
func imageType(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x89PNG\r\n\x1a\n")):
		return "image/png"
	case bytes.HasPrefix(head, []byte("\xff\xd8\xff")):
		return "image/jpeg"
	case bytes.HasPrefix(head, []byte("GIF87a")), bytes.HasPrefix(head, []byte("GIF89a")):
		return "image/gif"
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return "image/webp"
	}
	return ""
}

// shellQuote quotes s for a bash command line shown to the model.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
