package openai

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"mime"
	"net"
	"net/http"
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
// the call's responseMeta, filters SSE bodies (see sseFilter) and bounds error
// bodies.
type transport struct {
	base http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if m, ok := req.Context().Value(metaKey{}).(*responseMeta); ok {
		m.status, m.header = resp.StatusCode, resp.Header
	}
	switch {
	case resp.StatusCode >= http.StatusBadRequest:
		resp.Body = limitedBody{io.LimitReader(resp.Body, maxErrorBody), resp.Body}
	case isEventStream(resp.Header):
		resp.Body = newSSEFilter(resp.Body)
	}
	return resp, nil
}

func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

type limitedBody struct {
	io.Reader
	io.Closer
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

// sseFilter drops the SSE lines go-openai does not understand — comments
// (": keep-alive", ": OPENROUTER PROCESSING") and the event:, id: and retry:
// fields — before go-openai reads the body.
//
// go-openai collects every line that is not "data:" into the buffer it later
// parses as an error object, and never clears it. One keep-alive comment before a
// mid-stream {"error":…} event would make that error unreadable, and the provider's
// code would be lost. Data lines, blank lines and anything else pass unchanged, so
// a plain JSON error body is still seen. The filter allocates nothing per line.
type sseFilter struct {
	br      *bufio.Reader
	body    io.Closer
	pending []byte // the part of the current kept line not yet returned
	err     error  // the read error to return once pending is drained
	// midLine is set while a line longer than the buffer is being consumed;
	// keepLine then carries the decision taken on its first piece.
	midLine, keepLine bool
}

func newSSEFilter(body io.ReadCloser) *sseFilter {
	return &sseFilter{br: bufio.NewReaderSize(body, 16<<10), body: body}
}

func (f *sseFilter) Read(p []byte) (int, error) {
	for {
		if len(f.pending) > 0 {
			n := copy(p, f.pending)
			f.pending = f.pending[n:]
			return n, nil
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
				keep = !droppedField(line)
			}
			f.midLine, f.keepLine = err == bufio.ErrBufferFull, keep
			if keep {
				f.pending = line
			}
		}
		if err != nil && err != bufio.ErrBufferFull {
			f.err = err
		}
	}
}

func (f *sseFilter) Close() error { return f.body.Close() }

var (
	fieldEvent = []byte("event:")
	fieldID    = []byte("id:")
	fieldRetry = []byte("retry:")
)

// droppedField reports whether an SSE line is a comment or a field other than data.
func droppedField(line []byte) bool {
	if line[0] == ':' {
		return true
	}
	return bytes.HasPrefix(line, fieldEvent) || bytes.HasPrefix(line, fieldID) || bytes.HasPrefix(line, fieldRetry)
}
