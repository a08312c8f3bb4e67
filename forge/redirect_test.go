package forge_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/forge"
)

// A redirect within the API's host is followed, with the token: GitHub
// answers a renamed repository's calls with a 301 to its new address.
func TestRedirectWithinTheAPIIsFollowed(t *testing.T) {
	for _, kind := range []string{forge.GitHub, forge.GitLab, forge.Gitea} {
		t.Run(kind, func(t *testing.T) {
			var moved atomic.Bool
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if a := r.Header.Get("Authorization"); !strings.HasSuffix(a, " tok-secret") {
					w.WriteHeader(http.StatusUnauthorized)
					_, _ = w.Write([]byte(`{"message":"Bad credentials"}`))
					return
				}
				if strings.HasPrefix(r.URL.Path, "/api/moved/") {
					moved.Store(true)
					_, _ = w.Write([]byte(`[]`))
					return
				}
				http.Redirect(w, r, "/api/moved"+strings.TrimPrefix(r.URL.Path, "/api"), http.StatusMovedPermanently)
			}))
			t.Cleanup(srv.Close)
			c, _ := forge.New(forge.Config{Kind: kind, APIURL: srv.URL + "/api", Project: "acme/app", Token: "tok-secret"})
			if _, err := c.Comments(t.Context(), 1); err != nil {
				t.Fatalf("comments through a redirect within the API: %v", err)
			}
			if !moved.Load() {
				t.Error("the redirect was not followed")
			}
		})
	}
}

// Retry-After may be an HTTP date rather than seconds: the wait is until
// then.
func TestRetryAfterAsADate(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", time.Now().Add(3*time.Minute).UTC().Format(http.TimeFormat))
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = w.Write([]byte("Too Many Requests\n"))
	}))
	t.Cleanup(srv.Close)
	c, _ := forge.New(forge.Config{Kind: forge.Gitea, APIURL: srv.URL, Project: "acme/app", Token: "tok"})
	_, _, err := c.Find(t.Context(), "h", "main")
	var fe *forge.Error
	if !errors.As(err, &fe) || fe.Refused || fe.RetryAfter < 2*time.Minute || fe.RetryAfter > 3*time.Minute || !strings.Contains(err.Error(), "about 3 min") {
		t.Fatalf("%#v (%v), want a wait of about 3 minutes", err, err)
	}
}
