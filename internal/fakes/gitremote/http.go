package gitremote

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// HTTPOptions configure an HTTP remote.
type HTTPOptions struct {
	// Username required in Basic auth; any username is accepted when empty
	// (GitHub takes "x-access-token", GitLab "oauth2", Gitea anything).
	Username string
	// Password (the token) required in Basic auth. No auth at all when empty.
	Password string
}

// HTTPServer serves bare repositories over git's smart-HTTP protocol through
// `git http-backend`, the way a forge does, on 127.0.0.1. Pushes are allowed
// to authenticated clients.
type HTTPServer struct {
	opts    HTTPOptions
	root    string
	srv     *httptest.Server
	backend string

	mu       sync.Mutex
	rejected int
	requests []string
	agents   []string
	n        int
}

// NewHTTPServer starts an HTTP git server; tb.Cleanup stops it.
func NewHTTPServer(tb testing.TB, opts HTTPOptions) *HTTPServer {
	tb.Helper()
	execPath := Git(tb, "", "--exec-path")
	s := &HTTPServer{opts: opts, root: tb.TempDir(), backend: filepath.Join(execPath, "git-http-backend")}
	if _, err := os.Stat(s.backend); err != nil {
		tb.Skipf("git http-backend not available: %v", err)
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	tb.Cleanup(s.srv.Close)
	return s
}

// Serve publishes repo on the server and returns its URL
// (http://127.0.0.1:port/<name>.git), without credentials.
func (s *HTTPServer) Serve(tb testing.TB, repo *Repo) string {
	tb.Helper()
	s.mu.Lock()
	s.n++
	name := fmt.Sprintf("repo%d.git", s.n)
	s.mu.Unlock()
	if err := os.Symlink(repo.Path, filepath.Join(s.root, name)); err != nil {
		tb.Fatal(err)
	}
	return s.srv.URL + "/" + name
}

// ServeAt publishes repo at http://127.0.0.1:port/<path>.git, where path is
// owner/name as on a forge, and returns that URL.
func (s *HTTPServer) ServeAt(tb testing.TB, repo *Repo, path string) string {
	tb.Helper()
	dst := filepath.Join(s.root, filepath.FromSlash(path)+".git")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.Symlink(repo.Path, dst); err != nil {
		tb.Fatal(err)
	}
	return s.srv.URL + "/" + path + ".git"
}

// Rejected counts requests refused for missing or wrong credentials.
func (s *HTTPServer) Rejected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rejected
}

// UserAgents lists the User-Agent of every request so far: which git client
// asked (the CLI says "git/<version>").
func (s *HTTPServer) UserAgents() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.agents...)
}

// Requests lists "METHOD /path?query" of every request so far.
func (s *HTTPServer) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

func (s *HTTPServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.Method+" "+r.URL.RequestURI())
	s.agents = append(s.agents, r.UserAgent())
	s.mu.Unlock()

	user := ""
	if s.opts.Password != "" {
		u, p, ok := r.BasicAuth()
		if !ok || p != s.opts.Password || (s.opts.Username != "" && u != s.opts.Username) {
			s.mu.Lock()
			s.rejected++
			s.mu.Unlock()
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		user = u
	}

	// net/http/cgi refuses chunked bodies (CGI needs CONTENT_LENGTH), and git
	// sends large pushes chunked: read the body whole first.
	if len(r.TransferEncoding) > 0 {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		r.TransferEncoding = nil
	}

	env := []string{
		"GIT_PROJECT_ROOT=" + s.root,
		"GIT_HTTP_EXPORT_ALL=1",
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_CONFIG_COUNT=1",
		"GIT_CONFIG_KEY_0=http.receivepack",
		"GIT_CONFIG_VALUE_0=true",
	}
	if user != "" {
		env = append(env, "REMOTE_USER="+user)
	}
	h := &cgi.Handler{Path: s.backend, Root: "/", Env: env, Stderr: io.Discard}
	h.ServeHTTP(w, r)
}

// Blackhole returns the URL of a server on 127.0.0.1 that accepts requests and
// never answers, to prove that network calls time out instead of hanging.
func Blackhole(tb testing.TB) string {
	tb.Helper()
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	tb.Cleanup(func() {
		close(stop)
		srv.Close()
	})
	return srv.URL + "/silent.git"
}

// ContainsSecret reports the files under dir whose bytes contain secret; the
// test for "no token on disk".
func ContainsSecret(tb testing.TB, dir, secret string) []string {
	tb.Helper()
	var hits []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(secret)) {
			hits = append(hits, strings.TrimPrefix(p, dir))
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return hits
}
