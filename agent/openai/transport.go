package openai

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"time"
)

// responseMeta receives the status and headers of one call's response. go-openai
// hides response headers from its errors, yet Retry-After lives there; the
// transport fills this holder, which travels in the request's context, so
// concurrent calls never see each other's headers.
//
// http.Client runs RoundTrip on the caller's goroutine before Do returns, so the
// caller may read the holder after the go-openai call without locking.
type responseMeta struct {
	status int
	header http.Header
}

type metaKey struct{}

func withMeta(ctx context.Context, m *responseMeta) context.Context {
	return context.WithValue(ctx, metaKey{}, m)
}

// maxErrorBody bounds how much of an error answer is read: an HTML page from a
// proxy says nothing more after its first kilobytes.
const maxErrorBody = 1 << 20

// transport wraps the caller's RoundTripper: it records status and headers into
// the call's responseMeta, filters the bodies of streaming answers (see
// sseFilter) and reads, bounds and closes error bodies.
type transport struct {
	base  http.RoundTripper
	query url.Values // the base URL's query, added to every request's
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.query) > 0 {
		req = req.Clone(req.Context()) // a RoundTripper does not change its request
		q := req.URL.Query()
		for k, vs := range t.query {
			for _, v := range vs {
				q.Add(k, v)
			}
		}
		req.URL.RawQuery = q.Encode()
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if m, ok := req.Context().Value(metaKey{}).(*responseMeta); ok {
		m.status, m.header = resp.StatusCode, resp.Header
	}
	switch {
	case resp.StatusCode >= http.StatusBadRequest:
		// Read the error answer here and close it: go-openai reads it but
		// never closes it, which would hold the connection.
		b, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
	case resp.StatusCode < http.StatusMultipleChoices && req.Header.Get("Accept") == "text/event-stream":
		// A streaming request (go-openai says so in Accept): go-openai will
		// read this body line by line, whatever content type the server claims.
		resp.Body = newSSEFilter(resp.Body)
	}
	return resp, nil
}

// defaultTransport is used when the caller brings no HTTP client. It bounds the
// phases before the answer starts (dial, TLS, waiting for headers) but never the
// body: a reply may stream for many minutes, and the caller's context governs it.
// The header timeout is generous because local servers (llama.cpp, Ollama) may
// load a model or process a long prompt before they answer.
func defaultTransport() *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
		ExpectContinueTimeout: time.Second,
	}
}

// sseFilter normalizes an SSE body before go-openai reads it, so that every
// event reaches Stream as a data line and nothing else can disturb go-openai:
//
//   - Comments (": keep-alive", ": OPENROUTER PROCESSING"), the event:, id: and
//     retry: fields and blank lines are dropped. go-openai collects every line
//     that is not "data:" into the buffer it later parses as an error object and
//     never clears it: one keep-alive comment before a mid-stream error would make
//     that error unreadable and lose the provider's code.
//   - A data line holding an error object (data: {"error":…}) is passed with a
//     space after its brace. go-openai would otherwise treat it itself, but only
//     once the next line arrives, and lose it if anything odd came first; this
//     way Stream decodes it like any chunk and reports it as a provider error.
//
// Anything else (a plain JSON error body sent with a 200) passes unchanged,
// with a newline added at the end if it lacked one, since go-openai ignores a
// last line without one. The
// filter allocates nothing per line; dropping the blank separators also spares
// go-openai one line read (and its allocation) per event.
type sseFilter struct {
	br *bufio.Reader
	// pending holds the parts of the current line still to return: the line,
	// or the line split around the injected space.
	pending [4][]byte
	err     error // the read error to return once pending is drained
	body    io.Closer
	// midLine is set while a line longer than the buffer is being consumed;
	// keepLine then carries the decision taken on its first piece.
	midLine, keepLine bool
}

// sseBuffer is the filter's read buffer. Every live run holds one while its
// model streams, so it is small: a longer line passes in pieces (midLine),
// and what the filter decides from a line (a comment, a field it drops, an
// error object) shows in its first bytes.
const sseBuffer = 4 << 10

func newSSEFilter(body io.ReadCloser) *sseFilter {
	return &sseFilter{br: bufio.NewReaderSize(body, sseBuffer), body: body}
}

var (
	space   = []byte(" ")
	newline = []byte("\n")
)

func (f *sseFilter) Read(p []byte) (int, error) {
	for {
		for i := range f.pending {
			if len(f.pending[i]) > 0 {
				n := copy(p, f.pending[i])
				f.pending[i] = f.pending[i][n:]
				return n, nil
			}
		}
		if f.err != nil {
			return 0, f.err
		}
		// The slice stays valid until the next read from br, which only
		// happens once pending is drained.
		line, err := f.br.ReadSlice('\n')
		if len(line) > 0 {
			keep := f.keepLine
			if !f.midLine {
				keep = !droppedLine(line)
				if keep {
					if cut := errorObjectBrace(line); cut > 0 {
						f.pending = [4][]byte{line[:cut], space, line[cut:]}
						line = nil
					}
				}
			}
			f.midLine, f.keepLine = err == bufio.ErrBufferFull, keep
			if keep && line != nil {
				f.pending[0] = line
			}
			// go-openai drops a last line that has no newline.
			if keep && err == io.EOF {
				f.pending[3] = newline
			}
		}
		if err != nil && err != bufio.ErrBufferFull {
			f.err = err
		}
	}
}

func (f *sseFilter) Close() error { return f.body.Close() }

var (
	fieldData  = []byte("data:")
	fieldEvent = []byte("event:")
	fieldID    = []byte("id:")
	fieldRetry = []byte("retry:")
	errorKey   = []byte(`{"error":`)
)

// droppedLine reports whether an SSE line is blank, a comment, or a field other
// than data.
func droppedLine(line []byte) bool {
	if len(bytes.TrimSpace(line)) == 0 || line[0] == ':' {
		return true
	}
	return bytes.HasPrefix(line, fieldEvent) || bytes.HasPrefix(line, fieldID) || bytes.HasPrefix(line, fieldRetry)
}

// errorObjectBrace returns the offset just after the "{" of a data line that
// starts with {"error":, or 0.
func errorObjectBrace(line []byte) int {
	if !bytes.HasPrefix(line, fieldData) {
		return 0
	}
	rest := bytes.TrimLeft(line[len(fieldData):], " \t")
	if !bytes.HasPrefix(rest, errorKey) {
		return 0
	}
	return len(line) - len(rest) + 1
}
