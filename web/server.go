// Package web serves the session pages: /s/<thread> shows one thread's whole
// record (prompts with their authors, the model's answers, every tool call
// with its arguments and output, compactions, model changes, retries,
// pushes, and usage and cost per run) and follows a live run; / lists the
// sessions the viewer may see.
//
// Access. A page answers 401 unless the request carries a valid link token
// for its thread (?t=…, or the cookie the page sets from it), or the
// operator's authenticating proxy vouched for it with Options.AuthHeader.
// Tokens are HMAC-signed, expire, and open one thread only (token.go).
//
// Safety. Everything shown comes from untrusted sources (the model, tool
// output, file and branch names, people): html/template escapes it all, the
// Markdown renderer emits only its own tags and safe links, and an allowlist
// keeps nothing else (markdown.go),
// configured secrets are replaced by [redacted] before anything is rendered, and a
// strict Content-Security-Policy allows only this server's script, which is
// needed for the live follow only.
//
// Live follow. The page's script opens /s/<thread>/events (server-sent
// events). The server polls the thread's version (storage.ThreadVersion),
// and when it changed sends each item whose HTML changed, keyed by its DOM
// id: the script replaces it in place or appends it. Nothing is lost: a
// reconnect names the version its page showed, and the server resends every
// item if that is not the current one.
package web

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"hash/maphash"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/threadsmith/threadsmith/agent/llm"
	"github.com/threadsmith/threadsmith/agent/transcript"
	"github.com/threadsmith/threadsmith/storage"
)

// Store is what the pages read of storage: the list of threads and each
// thread's whole record (storage.Store has it, with the contract on its
// methods).
type Store interface {
	ThreadSummaries(ctx context.Context) ([]storage.ThreadSummary, error)
	ThreadByID(ctx context.Context, id int64) (storage.Thread, error)
	ThreadSessions(ctx context.Context, threadID int64) ([]storage.Session, error)
	ThreadRuns(ctx context.Context, threadID int64) ([]storage.Run, error)
	ThreadRunUsage(ctx context.Context, threadID int64) (map[int64]storage.RunUsage, error)
	ThreadPushes(ctx context.Context, threadID int64) ([]storage.Push, error)
	ThreadDecisions(ctx context.Context, threadID int64) ([]storage.Decision, error)
	ThreadInbound(ctx context.Context, threadID int64) ([]storage.Inbound, error)
	ThreadVersion(ctx context.Context, threadID int64) (string, error)
	LoadEntries(ctx context.Context, sessionID string) ([]transcript.Entry, error)
}

// Options configure a Server.
type Options struct {
	Store Store
	// Key signs link tokens (http.session_key); empty: no token is valid.
	Key []byte
	// TTL is how long a new link is valid. Default 7 days.
	TTL time.Duration
	// AuthHeader names the header an authenticating proxy sets: a request
	// carrying it (non-empty) may see every session.
	AuthHeader string
	// PublicURL is the pages' address as people reach it, for links.
	PublicURL string
	// Secrets are replaced by [redacted] wherever they would be shown.
	Secrets []string
	// CompareURL returns the compare view of a repository's branch, "" if
	// unknown. Nil: no links.
	CompareURL func(repo, branch string) string
	// PushDiff returns the patch of a push: from the previous pushed commit
	// (from empty: the branch's fork point) to to; truncated when it was
	// cut. Nil: pushes show no diff.
	PushDiff func(ctx context.Context, repo, from, to string) (patch string, truncated bool, err error)
	// FullOutput opens the file where a command's whole output was kept
	// when the model got only its end (a tool result's fullOutputPath), in
	// thread's own scratch folder; an error when it is gone or elsewhere.
	// Nil: the pages do not offer it.
	FullOutput func(thread storage.Thread, path string) (*os.File, error)
	// Poll is how often a live page's thread is checked. Default 1s.
	Poll   time.Duration
	Now    func() time.Time
	Logger *slog.Logger
}

// Server serves the session pages.
type Server struct {
	opts     Options
	signer   signer
	redactor *strings.Replacer
	secrets  []string // what redactor hides
	tmpl     *template.Template
	log      *slog.Logger
	diffs    diffCache
	pieces   pieceCache
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// minSecret matches the bot's redaction elsewhere: shorter strings would
// blank ordinary words.
const minSecret = 6

// redacted stands for a secret, as in tool output (tools.Redacted). Not
// "***": secrets are replaced before Markdown is rendered, and *** there is
// emphasis or a rule.
const redacted = "[redacted]"

// New returns a Server.
func New(opts Options) *Server {
	if opts.TTL <= 0 {
		opts.TTL = 7 * 24 * time.Hour
	}
	if opts.Poll <= 0 {
		opts.Poll = time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	opts.PublicURL = strings.TrimRight(opts.PublicURL, "/")
	var hidden, pairs []string
	for _, sec := range opts.Secrets {
		if len(sec) >= minSecret {
			hidden = append(hidden, sec)
		}
	}
	if len(opts.Key) > 0 {
		hidden = append(hidden, string(opts.Key))
	}
	for _, sec := range hidden {
		pairs = append(pairs, sec, redacted)
	}
	s := &Server{
		secrets:  hidden,
		pieces:   pieceCache{seed: maphash.MakeSeed()},
		opts:     opts,
		signer:   signer{key: opts.Key},
		redactor: strings.NewReplacer(pairs...),
		log:      opts.Logger,
	}
	s.tmpl = template.Must(template.New("").Funcs(template.FuncMap{
		"when":   func(t time.Time) string { return formatTime(t) },
		"iso":    func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"cost":   func(c float64) string { return "$" + strconv.FormatFloat(c, 'f', 4, 64) },
		"tokens": formatTokens,
		"bytes":  formatBytes,
	}).ParseFS(templateFS, "templates/*.html"))
	return s
}

// Link returns a link to thread's page valid for the configured TTL, or ""
// without a public URL or key.
func (s *Server) Link(threadID int64) string {
	if s.opts.PublicURL == "" || len(s.opts.Key) == 0 {
		return ""
	}
	token := s.signer.sign(threadID, s.opts.Now().Add(s.opts.TTL))
	return s.opts.PublicURL + "/s/" + strconv.FormatInt(threadID, 10) + "?t=" + url.QueryEscape(token)
}

// Mount registers the pages on mux: / (exactly), /s/… and /assets/….
func (s *Server) Mount(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", s.list)
	mux.HandleFunc("GET /s/{thread}", s.session)
	mux.HandleFunc("GET /s/{thread}/events", s.events)
	mux.HandleFunc("GET /s/{thread}/output/{key}", s.output)
	mux.HandleFunc("GET /s/{thread}/full/{key}", s.full)
	mux.HandleFunc("GET /s/{thread}/diff/{push}", s.diff)
	mux.HandleFunc("GET /assets/style.css", serveStyle)
	mux.Handle("GET /assets/", http.FileServerFS(assetFS))
}

// styleCSS is the pages' stylesheet: assets/style.css, then the code
// highlighter's classes (highlightCSS).
var styleCSS = func() []byte {
	css, err := assetFS.ReadFile("assets/style.css")
	if err != nil {
		panic(err) // embedded at build time
	}
	return append(css, highlightCSS...)
}()

func serveStyle(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	http.ServeContent(w, r, "style.css", time.Time{}, bytes.NewReader(styleCSS))
}

// Handler is the pages alone, for tests and for a server of their own.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.Mount(mux)
	return mux
}

// securityHeaders go on every page: only this server's stylesheet and
// script run, nothing may frame the page, and neither the link's token nor
// the page's address leaks to the sites it links.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
}

// cookieName is the cookie that keeps thread's token after the link was
// opened, for the live follow, the output pages and the list.
func cookieName(threadID int64) string { return "tsp_" + strconv.FormatInt(threadID, 10) }

// proxied reports whether the operator's proxy authenticated the request.
func (s *Server) proxied(r *http.Request) bool {
	return s.opts.AuthHeader != "" && strings.TrimSpace(r.Header.Get(s.opts.AuthHeader)) != ""
}

// authorize checks r's access to thread. It returns the token to carry in
// the page's own links when it came in the URL (a client without cookies
// still follows them), and sets the cookie from it.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, threadID int64) (token string, err error) {
	if s.proxied(r) {
		return "", nil
	}
	now := s.opts.Now()
	if t := r.URL.Query().Get("t"); t != "" {
		expires, err := s.signer.verify(t, threadID, now)
		if err != nil {
			return "", err
		}
		http.SetCookie(w, &http.Cookie{
			Name: cookieName(threadID), Value: t, Path: "/", Expires: expires,
			HttpOnly: true, SameSite: http.SameSiteLaxMode,
			Secure: r.TLS != nil || strings.HasPrefix(s.opts.PublicURL, "https://"),
		})
		return t, nil
	}
	if c, err := r.Cookie(cookieName(threadID)); err == nil {
		if _, err := s.signer.verify(c.Value, threadID, now); err != nil {
			return "", err
		}
		return "", nil
	}
	return "", errBadToken
}

func (s *Server) unauthorized(w http.ResponseWriter, err error) {
	securityHeaders(w.Header())
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusUnauthorized)
	msg := "This page needs a valid link: ask for one with !link in the thread."
	if errors.Is(err, errExpired) {
		msg = "This link has expired: ask for a new one with !link in the thread."
	}
	_, _ = w.Write([]byte(msg + "\n"))
}

// thread reads the path's thread id and checks r's access to it (see
// authorize); when it reports false it has answered (404 or 401).
func (s *Server) thread(w http.ResponseWriter, r *http.Request) (id int64, token string, ok bool) {
	id, err := strconv.ParseInt(r.PathValue("thread"), 10, 64)
	if err != nil || id <= 0 {
		http.NotFound(w, r)
		return 0, "", false
	}
	token, err = s.authorize(w, r, id)
	if err != nil {
		s.unauthorized(w, err)
		return 0, "", false
	}
	return id, token, true
}

func (s *Server) session(w http.ResponseWriter, r *http.Request) {
	id, token, ok := s.thread(w, r)
	if !ok {
		return
	}
	p, err := s.build(r.Context(), id, token)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	live := "/s/" + strconv.FormatInt(id, 10) + "/events?v=" + url.QueryEscape(p.Version)
	if token != "" {
		live += "&t=" + url.QueryEscape(token)
	}
	s.render(w, "session.html", map[string]any{"Page": p, "Live": live})
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	all, err := s.opts.Store.ThreadSummaries(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	proxied := s.proxied(r)
	now := s.opts.Now()
	var shown []storage.ThreadSummary
	for _, t := range all {
		if proxied {
			shown = append(shown, t)
			continue
		}
		if c, err := r.Cookie(cookieName(t.ID)); err == nil {
			if _, err := s.signer.verify(c.Value, t.ID, now); err == nil {
				shown = append(shown, t)
			}
		}
	}
	if !proxied && len(shown) == 0 {
		s.unauthorized(w, errBadToken)
		return
	}
	rows := make([]map[string]any, len(shown))
	for i, t := range shown {
		state := "idle"
		switch {
		case t.Running:
			state = "running"
		case t.Pending > 0:
			state = "queued"
		case t.State == storage.ThreadClosed:
			state = "closed"
		}
		where := s.redactor.Replace(threadTitle(t.Key))
		title := where
		if h := headline(s.redactor.Replace(t.Request)); h != "" {
			title = h
		}
		rows[i] = map[string]any{
			"ID": t.ID, "Title": title, "Where": where, "State": state,
			"Repo": s.redactor.Replace(t.Repo), "Branch": s.redactor.Replace(t.Branch),
			"Last": t.LastActivity, "Cost": t.Cost,
		}
	}
	s.render(w, "list.html", map[string]any{"Rows": rows})
}

// output serves one tool result's whole output as plain text: never HTML,
// whatever it contains.
func (s *Server) output(w http.ResponseWriter, r *http.Request) {
	id, _, ok := s.thread(w, r)
	if !ok {
		return
	}
	m, err := s.toolResult(r.Context(), id, r.PathValue("key"))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	securityHeaders(w.Header())
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte(s.redactor.Replace(m.TextContent())))
}

// toolResult finds the message of thread id's entry key ("s<session>-e<seq>").
func (s *Server) toolResult(ctx context.Context, id int64, key string) (*llm.Message, error) {
	var si int
	var seq int64
	if _, err := fmtSscanKey(key, &si, &seq); err != nil {
		return nil, storage.ErrNotFound
	}
	sessions, err := s.opts.Store.ThreadSessions(ctx, id)
	if err != nil {
		return nil, err
	}
	if si < 0 || si >= len(sessions) {
		return nil, storage.ErrNotFound
	}
	entries, err := s.opts.Store.LoadEntries(ctx, sessions[si].ID)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.Seq == seq && e.Message != nil {
			return e.Message, nil
		}
	}
	return nil, storage.ErrNotFound
}

func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var b strings.Builder
	if err := s.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		s.log.Error("rendering a session page", "template", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	securityHeaders(w.Header())
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	// Last line of defence: a secret that reached the HTML some other way.
	_, _ = w.Write([]byte(s.redactor.Replace(b.String())))
}

// fail answers an error without its detail (paths, SQL): that goes to the log.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, storage.ErrNotFound) {
		http.NotFound(w, r)
		return
	}
	s.log.Error("serving a session page", "path", r.URL.Path, "err", err)
	http.Error(w, "the session could not be read", http.StatusInternalServerError)
}

// diff serves one push's whole patch as plain text.
func (s *Server) diff(w http.ResponseWriter, r *http.Request) {
	id, _, ok := s.thread(w, r)
	if !ok {
		return
	}
	pushID, err := strconv.ParseInt(r.PathValue("push"), 10, 64)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	th, err := s.opts.Store.ThreadByID(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	pushes, err := s.opts.Store.ThreadPushes(r.Context(), id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	for i, p := range pushes {
		if p.ID != pushID || p.Result != storage.PushOK {
			continue
		}
		patch, ok := s.pushPatch(r.Context(), th.Repo, pushes, i)
		if !ok {
			break
		}
		securityHeaders(w.Header())
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(s.redactor.Replace(patch)))
		return
	}
	http.NotFound(w, r)
}
