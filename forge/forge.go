// Package forge opens and updates the pull (merge) request of a thread's
// branch on GitHub (and GitHub Enterprise), GitLab and Gitea/Forgejo, and
// reads its review comments, over each forge's REST API with the
// repository's token.
//
// Contract:
//   - Ensure is idempotent: it finds the open request from head to base and
//     updates its body, or opens one (a draft where the forge has drafts and
//     the caller asked for one). A request that appeared meanwhile ("already
//     exists") is found and updated, never duplicated.
//   - Errors are *Error values; Error.Refused says the forge will not let
//     this token do it (401, 403, 404 on the project), which the caller tells
//     the thread once instead of retrying after every push.
//   - The token is sent only to the configured API host and never appears
//     in an error.
package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Kinds of forge.
const (
	GitHub = "github"
	GitLab = "gitlab"
	Gitea  = "gitea"
)

// Config says where a repository's requests live.
type Config struct {
	// Kind is GitHub, GitLab or Gitea.
	Kind string
	// APIURL is the REST base: https://api.github.com,
	// https://<host>/api/v3 (GitHub Enterprise), https://<host>/api/v4
	// (GitLab), https://<host>/api/v1 (Gitea, Forgejo).
	APIURL string
	// Project is owner/repo (GitLab: the full group/subgroup/project path).
	Project string
	Token   string
	// HTTPClient makes the calls. Default: a client with a 30 s timeout.
	HTTPClient *http.Client
}

// Resolve fills what Config leaves out from the repository's remote URL:
// the project path, the kind (from forge, else guessed from the host) and
// the API base (from apiURL, else the forge's usual one on that host).
func Resolve(remoteURL, forge, apiURL, token string) (Config, error) {
	host, path, err := splitRemote(remoteURL)
	if err != nil {
		return Config{}, err
	}
	kind := strings.ToLower(forge)
	if kind == "" || kind == "auto" {
		kind = guess(host)
	}
	if kind == "forgejo" {
		kind = Gitea
	}
	if kind != GitHub && kind != GitLab && kind != Gitea {
		return Config{}, fmt.Errorf("cannot tell which forge %s is; set forge (github, gitlab or gitea)", host)
	}
	if apiURL == "" {
		switch {
		case kind == GitHub && host == "github.com":
			apiURL = "https://api.github.com"
		case kind == GitHub:
			apiURL = "https://" + host + "/api/v3"
		case kind == GitLab:
			apiURL = "https://" + host + "/api/v4"
		default:
			apiURL = "https://" + host + "/api/v1"
		}
	}
	return Config{Kind: kind, APIURL: strings.TrimSuffix(apiURL, "/"), Project: path, Token: token}, nil
}

func guess(host string) string {
	h := strings.ToLower(host)
	switch {
	case h == "github.com" || strings.Contains(h, "github"):
		return GitHub
	case strings.Contains(h, "gitlab"):
		return GitLab
	case strings.Contains(h, "gitea") || strings.Contains(h, "forgejo") || h == "codeberg.org":
		return Gitea
	}
	return ""
}

// splitRemote returns the host and owner/repo path of a remote URL (https,
// ssh://, or scp-like git@host:owner/repo.git).
func splitRemote(remote string) (host, path string, err error) {
	switch {
	case strings.Contains(remote, "://"):
		u, perr := url.Parse(remote)
		if perr != nil || u.Host == "" {
			return "", "", fmt.Errorf("remote %q is not a URL of a forge", remote)
		}
		host, path = u.Hostname(), u.Path
	case strings.Contains(remote, ":") && !strings.HasPrefix(remote, "/"):
		h, p, _ := strings.Cut(remote, ":")
		if i := strings.LastIndex(h, "@"); i >= 0 {
			h = h[i+1:]
		}
		host, path = h, p
	default:
		return "", "", fmt.Errorf("remote %q is a local path, not a forge", remote)
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	if !strings.Contains(path, "/") {
		return "", "", fmt.Errorf("remote %q has no owner/repository path", remote)
	}
	return host, path, nil
}

// Request is the pull request a thread wants.
type Request struct {
	Head, Base  string
	Title, Body string
	Draft       bool
}

// PR is an open pull (merge) request.
type PR struct {
	Number int
	URL    string
	Draft  bool
	// Created is set when Ensure opened it.
	Created bool
}

// Comment is one review comment (or a comment on the request).
type Comment struct {
	// Key is unique among the request's comments ("review:123"): review
	// and general comments are numbered separately on some forges.
	Key    string
	ID     int64
	Author string
	Body   string
	// Path and Line locate a comment on the diff; empty for a general one.
	Path string
	Line int
	// Hunk is the diff around the line, when the forge gives it.
	Hunk string
	URL  string
	// State is set on a review's own text (its summary): "changes
	// requested", "approved" or "commented".
	State string
	// Created is when it was written (zero when the forge did not say).
	Created time.Time
}

// Error is a forge's refusal or failure.
type Error struct {
	Status  int
	Message string
	// Refused: the token may not do this here (401, 403, 404).
	Refused bool
	// RetryAfter is the forge's rate-limit wait, when it gave one.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return e.Message
	}
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
}

// Client talks to one repository's forge.
type Client struct {
	cfg  Config
	http *http.Client
	api  api
}

// api is what differs between forges.
type api interface {
	find(ctx context.Context, c *Client, head, base string) (PR, bool, error)
	create(ctx context.Context, c *Client, r Request) (PR, error)
	update(ctx context.Context, c *Client, number int, title, body string) error
	comments(ctx context.Context, c *Client, number int) ([]Comment, error)
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	c := &Client{cfg: cfg, http: cfg.HTTPClient}
	if c.http == nil {
		c.http = &http.Client{Timeout: 30 * time.Second, CheckRedirect: sameHost}
	}
	switch cfg.Kind {
	case GitHub:
		c.api = github{}
	case GitLab:
		c.api = gitlab{}
	case Gitea:
		c.api = gitea{}
	default:
		return nil, fmt.Errorf("unknown forge %q", cfg.Kind)
	}
	if cfg.Token == "" {
		return nil, &Error{Message: "no token is configured for this repository", Refused: true}
	}
	return c, nil
}

// sameHost follows a redirect only to the host (and port) the call went
// to, or from http to https on it: GitHub moves a renamed repository's
// calls within its API, and a redirect elsewhere would take the token
// along (net/http keeps Authorization for another port of the same host,
// and any other header everywhere). The redirect's answer is then the
// call's, a failure.
func sameHost(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	from, to := via[0].URL, req.URL
	if to.Host == from.Host && to.Scheme == from.Scheme {
		return nil
	}
	if from.Scheme == "http" && to.Scheme == "https" && to.Hostname() == from.Hostname() && from.Port() == "" && (to.Port() == "" || to.Port() == "443") {
		return nil // an upgrade to https on the same host
	}
	return http.ErrUseLastResponse
}

// Kind is the forge's kind.
func (c *Client) Kind() string { return c.cfg.Kind }

// Ensure opens the request for r, or updates the open one's title and body.
func (c *Client) Ensure(ctx context.Context, r Request) (PR, error) {
	pr, ok, err := c.api.find(ctx, c, r.Head, r.Base)
	if err != nil {
		return PR{}, err
	}
	if ok {
		return pr, c.api.update(ctx, c, pr.Number, r.Title, r.Body)
	}
	pr, err = c.api.create(ctx, c, r)
	var fe *Error
	if errors.As(err, &fe) && (fe.Status == http.StatusUnprocessableEntity || fe.Status == http.StatusConflict) {
		// Opened meanwhile (another replica, a person): use that one.
		if pr, ok, ferr := c.api.find(ctx, c, r.Head, r.Base); ferr == nil && ok {
			return pr, c.api.update(ctx, c, pr.Number, r.Title, r.Body)
		}
	}
	if err != nil {
		return PR{}, err
	}
	pr.Created = true
	return pr, nil
}

// Find returns the open request from head to base, if there is one.
func (c *Client) Find(ctx context.Context, head, base string) (PR, bool, error) {
	return c.api.find(ctx, c, head, base)
}

// Comments returns the request's review comments and comments, oldest
// first.
func (c *Client) Comments(ctx context.Context, number int) ([]Comment, error) {
	return c.api.comments(ctx, c, number)
}

// do makes one call: body (if any) as JSON, the answer decoded into out.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) error {
	u := c.cfg.APIURL + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	_, err := c.call(ctx, method, u, body, out)
	return err
}

// maxPages bounds how many pages of one list getAll reads (100 items a
// page on GitHub and GitLab, 50 on Gitea).
const maxPages = 50

// getAll reads every page of the list at path: the forge's Link header
// (GitHub, GitLab and Gitea all send one) names the next page. A next page
// elsewhere than the API base is not followed: the token goes to that host
// only.
func getAll[T any](ctx context.Context, c *Client, path string, query url.Values) ([]T, error) {
	u := c.cfg.APIURL + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var all []T
	for range maxPages {
		var page []T
		h, err := c.call(ctx, "GET", u, nil, &page)
		if err != nil {
			return nil, err
		}
		all = append(all, page...)
		next := nextLink(h.Values("Link"))
		if next == "" || len(page) == 0 || !strings.HasPrefix(next, c.cfg.APIURL+"/") {
			break
		}
		u = next
	}
	return all, nil
}

// nextLink is the rel="next" URL of Link headers (RFC 8288), or "".
func nextLink(links []string) string {
	for _, l := range links {
		for _, part := range strings.Split(l, ",") {
			target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
			if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
				continue
			}
			for _, p := range strings.Split(params, ";") {
				k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(k, "rel") && slices.Contains(strings.Fields(strings.Trim(v, `"`)), "next") {
					return target[1 : len(target)-1]
				}
			}
		}
	}
	return ""
}

// call makes one call to the full URL u and returns the answer's headers.
func (c *Client) call(ctx context.Context, method, u string, body, out any) (http.Header, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "threadsmith")
	switch c.cfg.Kind {
	case GitHub:
		req.Header.Set("Accept", "application/vnd.github+json")
		req.Header.Set("X-GitHub-Api-Version", "2022-11-28")
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	case GitLab:
		// GitLab takes its access tokens as a bearer token too; unlike its
		// PRIVATE-TOKEN header, Authorization is not sent on when a
		// redirect leads to another host.
		req.Header.Set("Authorization", "Bearer "+c.cfg.Token)
	case Gitea:
		req.Header.Set("Authorization", "token "+c.cfg.Token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		// The URL is the API's; the error text never holds the token.
		return nil, &Error{Message: "the forge could not be reached: " + strings.ReplaceAll(err.Error(), c.cfg.Token, "***")}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode >= 300 {
		return resp.Header, responseError(resp, data)
	}
	if out == nil || len(data) == 0 {
		return resp.Header, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return resp.Header, &Error{Status: resp.StatusCode, Message: "the forge answered something unexpected: " + err.Error()}
	}
	return resp.Header, nil
}

// responseError turns a failed answer into an *Error with the forge's own
// message.
func responseError(resp *http.Response, data []byte) *Error {
	var body struct {
		// A string, or GitLab's list or field -> list of messages.
		Message json.RawMessage `json:"message"`
		Error   string          `json:"error"`
		Errors  []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	_ = json.Unmarshal(data, &body)
	msg := flatMessage(body.Message)
	if msg == "" {
		msg = body.Error
	}
	for _, e := range body.Errors {
		if e.Message != "" {
			msg += ": " + e.Message
		}
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	e := &Error{Status: resp.StatusCode, Message: "the forge refused: " + msg}
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
		e.Refused = true
	}
	if rateLimited(resp) {
		// A rate limit, not a refusal: GitHub answers its primary limit
		// with a 403 whose X-RateLimit-Remaining is 0, its secondary one
		// with a 403 or 429 and Retry-After; GitLab (and proxies in front
		// of Gitea) with a 429.
		e.Refused = false
		e.RetryAfter = retryAfter(resp.Header, time.Now())
		e.Message = "the forge's rate limit was reached"
		if e.RetryAfter > 0 {
			e.Message += fmt.Sprintf("; it takes calls again in about %d min", int((e.RetryAfter+time.Minute-1)/time.Minute))
		}
	}
	return e
}

// flatMessage reads a forge's message: "text", ["text", …] or GitLab's
// {"field": ["is too long"]} as "field is too long".
func flatMessage(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return strings.Join(list, "; ")
	}
	var fields map[string][]string
	if json.Unmarshal(raw, &fields) == nil {
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			for _, m := range fields[k] {
				parts = append(parts, k+" "+m)
			}
		}
		return strings.Join(parts, "; ")
	}
	return ""
}

// rateLimited says whether a failed answer is the forge's rate limit.
func rateLimited(resp *http.Response) bool {
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		return true
	case http.StatusForbidden:
		return resp.Header.Get("Retry-After") != "" || resp.Header.Get("X-RateLimit-Remaining") == "0"
	}
	return false
}

// retryAfter is how long a rate-limited client waits: Retry-After (seconds
// or an HTTP date), else until the window's reset (GitHub and Gitea
// X-RateLimit-Reset, GitLab RateLimit-Reset: epoch seconds); 0 when the
// forge did not say or the time has passed.
func retryAfter(h http.Header, now time.Time) time.Duration {
	var d time.Duration
	if s := h.Get("Retry-After"); s != "" {
		if n, err := strconv.Atoi(s); err == nil {
			d = time.Duration(n) * time.Second
		} else if t, err := http.ParseTime(s); err == nil {
			d = t.Sub(now)
		}
	} else {
		for _, k := range []string{"X-RateLimit-Reset", "RateLimit-Reset"} {
			if n, err := strconv.ParseInt(h.Get(k), 10, 64); err == nil {
				d = time.Unix(n, 0).Sub(now)
				break
			}
		}
	}
	return max(d, 0)
}

// owner is the owner part of owner/repo.
func (c *Client) owner() string {
	o, _, _ := strings.Cut(c.cfg.Project, "/")
	return o
}
