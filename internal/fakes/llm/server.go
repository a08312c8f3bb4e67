// Package llmfake is a scriptable OpenAI-compatible chat-completions server on
// 127.0.0.1 for tests: the real wire protocol (HTTP, server-sent events, OpenAI
// error JSON), driven by per-request scripts.
//
// A test chooses each answer either by queueing Responses (Push, consumed in
// arrival order) or with a handler function (Handle) that sees the decoded
// request; the queue wins while it is not empty. With neither, the server answers
// 501 "llmfake_unscripted", which no client retries, so a missing script fails fast.
//
// Every chat-completions request is recorded before its script plays, so
// WaitRequests returns as soon as a request has arrived. Scripts that wait (Delay,
// Hang, Endless) end when the client goes away, and record that they saw it
// (WaitDisconnects); they also end when the server closes, so Close never waits on
// a script. All methods are safe for concurrent use; handler functions run on the
// server's goroutines and must be safe too.
package llmfake

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Server is a running fake endpoint. Create it with New.
type Server struct {
	http *httptest.Server
	done chan struct{} // closed by Close: scripts stop waiting
	once sync.Once

	mu          sync.Mutex
	handler     func(Request) Response
	queue       []Response
	requests    []recorded
	disconnects int
	changed     chan struct{} // closed and replaced whenever requests or disconnects change
	models      []string
	apiKey      string
	queryKey    string // a proxy's key in the URL's query (?key=), if required
}

// recorded keeps what arrived, not the decoded form, so every Requests call can
// hand out a fresh deep copy.
type recorded struct {
	body   []byte
	header http.Header
}

// New starts a server on 127.0.0.1 and closes it when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		done:    make(chan struct{}),
		changed: make(chan struct{}),
		models:  []string{"fake-model"},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.serveChat)
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, errorBody(apiError{
			Message: "llmfake: no route for " + r.Method + " " + r.URL.Path, Type: "invalid_request_error",
		}))
	})
	s.http = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// URL is the OpenAI-compatible base URL, ending in /v1.
func (s *Server) URL() string { return s.http.URL + "/v1" }

// Close stops the server. Running scripts end at once; later connections are
// refused. It is safe to call more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		s.http.Close()
	})
}

// Handle sets the function that chooses the answer when the queue is empty.
func (s *Server) Handle(fn func(Request) Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = fn
}

// Push queues answers for the next requests, in order.
func (s *Server) Push(rs ...Response) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(s.queue, rs...)
}

// SetModels sets the ids GET /v1/models lists (default: "fake-model").
func (s *Server) SetModels(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = append([]string(nil), ids...)
}

// RequireAPIKey makes every endpoint answer 401 "invalid_api_key" unless the
// request carries "Authorization: Bearer key".
func (s *Server) RequireAPIKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apiKey = key
}

// Requests returns copies of every chat-completions request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	recs := append([]recorded(nil), s.requests...)
	s.mu.Unlock()
	out := make([]Request, 0, len(recs))
	for i, rec := range recs {
		r, err := decodeRequest(rec.body, rec.header, i+1)
		if err != nil {
			// Undecodable bodies were answered with 400; keep them visible.
			r = Request{Seq: i + 1, Header: rec.header.Clone(), Body: append([]byte(nil), rec.body...)}
		}
		out = append(out, r)
	}
	return out
}

// WaitRequests waits until at least n chat-completions requests have arrived and
// returns copies of all of them, or ctx's error.
func (s *Server) WaitRequests(ctx context.Context, n int) ([]Request, error) {
	if err := s.wait(ctx, func() bool { return len(s.requests) >= n }); err != nil {
		return nil, err
	}
	return s.Requests(), nil
}

// Disconnects reports how many times a script saw its client go away before the
// script ended.
func (s *Server) Disconnects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.disconnects
}

// WaitDisconnects waits until at least n disconnects have been seen, or ctx ends.
func (s *Server) WaitDisconnects(ctx context.Context, n int) error {
	return s.wait(ctx, func() bool { return s.disconnects >= n })
}

func (s *Server) wait(ctx context.Context, cond func() bool) error {
	for {
		s.mu.Lock()
		ok, ch := cond(), s.changed
		s.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// notifyLocked wakes every waiter; s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) sawDisconnect() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.disconnects++
	s.notifyLocked()
}

// RequireQueryKey makes every request need key=k in its URL's query, as a
// proxy that takes its key there does (401 otherwise).
func (s *Server) RequireQueryKey(k string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queryKey = k
}

// authorized answers 401 and reports false when a key is required and missing.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) bool {
	s.mu.Lock()
	key, qkey := s.apiKey, s.queryKey
	s.mu.Unlock()
	if (key == "" || r.Header.Get("Authorization") == "Bearer "+key) && (qkey == "" || r.URL.Query().Get("key") == qkey) {
		return true
	}
	writeJSON(w, http.StatusUnauthorized, errorBody(apiError{
		Message: "Incorrect API key provided.", Type: "invalid_request_error", Code: "invalid_api_key",
	}))
	return false
}

func (s *Server) serveModels(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(w, r) {
		return
	}
	s.mu.Lock()
	ids := append([]string(nil), s.models...)
	s.mu.Unlock()
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, id := range ids {
		list.Data = append(list.Data, model{ID: id, Object: "model", Created: fakeCreated, OwnedBy: "llmfake"})
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) serveChat(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away while sending
	}
	s.mu.Lock()
	s.requests = append(s.requests, recorded{body: body, header: r.Header.Clone()})
	seq := len(s.requests)
	s.notifyLocked()
	s.mu.Unlock()

	if !s.authorized(w, r) {
		return
	}
	req, err := decodeRequest(body, r.Header, seq)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody(apiError{Message: err.Error(), Type: "invalid_request_error"}))
		return
	}
	s.play(w, r, req, s.next(req))
}

// next picks the answer: the queue first, then the handler, then 501.
func (s *Server) next(req Request) Response {
	s.mu.Lock()
	if len(s.queue) > 0 {
		resp := s.queue[0]
		s.queue = s.queue[1:]
		s.mu.Unlock()
		return resp
	}
	h := s.handler
	s.mu.Unlock()
	if h != nil {
		return h(req)
	}
	return HTTPError(http.StatusNotImplemented, "llmfake_unscripted",
		"llmfake: no response scripted for request "+strings.TrimSpace(req.LastMessage().Content))
}

func errorBody(e apiError) map[string]apiError { return map[string]apiError{"error": e} }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
