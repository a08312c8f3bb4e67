package slackfake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// tokenKind is the kind of token a method requires.
type tokenKind int

const (
	needBot tokenKind = iota
	needApp
	needAny
)

// apiMethod answers one Web API method. It runs with s.mu held and returns the
// response fields (without "ok") or a Slack error code.
type apiMethod struct {
	token tokenKind
	fn    func(s *Server, p url.Values) (map[string]any, string)
}

// apiMethods are the methods slack-go's calls reach in threadsmith's Slack adapter.
var apiMethods = map[string]apiMethod{
	"auth.test":                    {needAny, (*Server).authTest},
	"apps.connections.open":        {needApp, (*Server).appsConnectionsOpen},
	"chat.postMessage":             {needBot, (*Server).chatPostMessage},
	"chat.update":                  {needBot, (*Server).chatUpdate},
	"chat.startStream":             {needBot, (*Server).chatStartStream},
	"chat.appendStream":            {needBot, (*Server).chatAppendStream},
	"chat.stopStream":              {needBot, (*Server).chatStopStream},
	"chat.postEphemeral":           {needBot, (*Server).chatPostEphemeral},
	"chat.delete":                  {needBot, (*Server).chatDelete},
	"chat.getPermalink":            {needBot, (*Server).chatGetPermalink},
	"reactions.add":                {needBot, (*Server).reactionsAdd},
	"reactions.remove":             {needBot, (*Server).reactionsRemove},
	"conversations.replies":        {needBot, (*Server).conversationsReplies},
	"conversations.history":        {needBot, (*Server).conversationsHistory},
	"conversations.info":           {needBot, (*Server).conversationsInfo},
	"users.info":                   {needBot, (*Server).usersInfo},
	"files.getUploadURLExternal":   {needBot, (*Server).filesGetUploadURLExternal},
	"files.completeUploadExternal": {needBot, (*Server).filesCompleteUploadExternal},
	"files.info":                   {needBot, (*Server).filesInfo},
	"assistant.threads.setStatus":  {needBot, (*Server).assistantThreadsSetStatus},
	"agents.sessions.setStatus":    {needBot, (*Server).agentsSessionsSetStatus},
	"views.publish":                {needBot, (*Server).viewsPublish},
}

// injection is a scripted answer for the next call to a method.
type injection struct {
	errCode    string
	retryAfter time.Duration // > 0: rate limited
}

// FailNext makes the next call to method answer {"ok":false,"error":code}, before
// the method does anything.
func (s *Server) FailNext(method, code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.injected[method] = append(s.injected[method], injection{errCode: code})
}

// RateLimitNext makes the next call to method rate limited with the given
// Retry-After (rounded up to whole seconds, at least 1), in the style RateLimits
// chose (HTTP 429 unless WithRateLimits said otherwise), whatever the rate limits.
func (s *Server) RateLimitNext(method string, retryAfter time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.injected[method] = append(s.injected[method], injection{retryAfter: max(retryAfter, time.Nanosecond)})
}

// LoseResponseNext makes the next call to method go through (the fake does
// what it asks) but closes the connection instead of answering: the client
// cannot tell whether it worked, as after a timeout.
func (s *Server) LoseResponseNext(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lose[method]++
}

// Calls returns every Web API call so far, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// CallsTo returns the calls to one method, in order.
func (s *Server) CallsTo(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// WaitCalls waits until method has been called n times and returns those calls.
func (s *Server) WaitCalls(ctx context.Context, method string, n int) ([]Call, error) {
	var out []Call
	err := s.waitFor(ctx, func() bool {
		out = out[:0]
		for _, c := range s.calls {
			if c.Method == method {
				out = append(out, c)
			}
		}
		return len(out) >= n
	})
	if err != nil {
		return nil, fmt.Errorf("slackfake: waiting for %d calls to %s: %w", n, method, err)
	}
	return out, nil
}

// RateLimited counts the calls answered as rate limited: HTTP 429s, and
// ok:false "ratelimited" answers in that style.
func (s *Server) RateLimited() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rateLimited
}

// apiResponse is what handleAPI writes.
type apiResponse struct {
	status     int
	body       map[string]any
	retryAfter int // seconds; 0 = no Retry-After header
}

var errBadJSON = errors.New("invalid_json")

func (s *Server) handleAPI(w http.ResponseWriter, r *http.Request) {
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	params, body, perr := readParams(r)
	token := params.Get("token")
	params.Del("token")
	if token == "" {
		token, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}

	s.mu.Lock()
	call := Call{Method: method, Params: params, Body: body, Token: s.tokenKind(token), Time: s.cfg.now()}
	res := s.dispatchLocked(&call, perr)
	call.Status = res.status
	if ok, _ := res.body["ok"].(bool); !ok {
		call.Error, _ = res.body["error"].(string)
	}
	lost := s.lose[method] > 0
	if lost {
		s.lose[method]--
		call.Lost = true
	}
	s.calls = append(s.calls, call)
	out, err := json.Marshal(res.body)
	s.notifyLocked()
	s.mu.Unlock()

	if lost {
		if conn, _, herr := http.NewResponseController(w).Hijack(); herr == nil {
			conn.Close()
			return
		}
	}

	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if res.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(res.retryAfter))
	}
	w.WriteHeader(res.status)
	_, _ = w.Write(out)
}

func (s *Server) tokenKind(token string) string {
	switch token {
	case "":
		return "none"
	case s.cfg.botToken:
		return "bot"
	case s.cfg.appToken:
		return "app"
	}
	return "invalid"
}

func (s *Server) dispatchLocked(call *Call, perr error) apiResponse {
	fail := func(code string) apiResponse {
		return apiResponse{status: http.StatusOK, body: map[string]any{"ok": false, "error": code}}
	}
	if perr != nil {
		if errors.Is(perr, errBadJSON) {
			return fail("invalid_json")
		}
		return fail("invalid_form_data")
	}
	m, ok := apiMethods[call.Method]
	if !ok {
		res := fail("unknown_method")
		res.body["req_method"] = call.Method
		return res
	}
	switch call.Token {
	case "none":
		return fail("not_authed")
	case "invalid":
		return fail("invalid_auth")
	}
	if (m.token == needBot && call.Token != "bot") || (m.token == needApp && call.Token != "app") {
		return fail("not_allowed_token_type")
	}
	if body := s.scopeErrorLocked(call.Method, call.Params); body != nil {
		return apiResponse{status: http.StatusOK, body: body}
	}
	if q := s.injected[call.Method]; len(q) > 0 {
		inj := q[0]
		s.injected[call.Method] = q[1:]
		if inj.retryAfter > 0 {
			return s.rateLimitedLocked(inj.retryAfter)
		}
		return fail(inj.errCode)
	}
	if wait := s.checkRateLimitLocked(call.Method, call.Params, call.Time); wait > 0 {
		return s.rateLimitedLocked(wait)
	}
	body, code := m.fn(s, call.Params)
	if code != "" {
		return fail(code)
	}
	if body == nil {
		body = map[string]any{}
	}
	body["ok"] = true
	return apiResponse{status: http.StatusOK, body: body}
}

// rateLimitedLocked answers a rate-limited call in the configured style.
func (s *Server) rateLimitedLocked(wait time.Duration) apiResponse {
	s.rateLimited++
	secs := max(1, int(math.Ceil(wait.Seconds())))
	status := http.StatusTooManyRequests
	if s.cfg.rateLimits != nil && s.cfg.rateLimits.Style == RateLimitOKFalse {
		status = http.StatusOK
	}
	return apiResponse{
		status:     status,
		body:       map[string]any{"ok": false, "error": "ratelimited"},
		retryAfter: secs,
	}
}

// readParams reads a form-encoded, multipart or JSON body (and the query string).
func readParams(r *http.Request) (url.Values, json.RawMessage, error) {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err != nil {
			return url.Values{}, nil, err
		}
		vals := r.URL.Query()
		if len(bytes.TrimSpace(body)) == 0 {
			return vals, nil, nil
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil {
			return vals, body, errBadJSON
		}
		for k, v := range obj {
			var str string
			if err := json.Unmarshal(v, &str); err == nil {
				vals.Set(k, str)
			} else if string(v) != "null" {
				vals.Set(k, string(v))
			}
		}
		return vals, body, nil
	case "multipart/form-data":
		if err := r.ParseMultipartForm(16 << 20); err != nil {
			return url.Values{}, nil, err
		}
		return r.Form, nil, nil
	default:
		if err := r.ParseForm(); err != nil {
			return url.Values{}, nil, err
		}
		return r.Form, nil, nil
	}
}
