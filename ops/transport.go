package ops

import (
	"net/http"
	"strconv"
	"strings"
)

// Transport returns next (http.DefaultTransport when nil) counting every
// request to a platform's API into m, by method, and every 429 answer. It
// sits under the adapters' clients, so it sees all their calls — those the
// outbox makes, and catch-up, user look-ups, downloads and uploads too.
//
// The method label is a route template: Slack's Web API method
// ("chat.update"), "files" for Slack's file hosts; Discord's HTTP verb and
// REST route with ids, tokens and emoji replaced ("PATCH
// channels/{id}/messages/{id}"), "cdn" for attachments.
func (m *Metrics) Transport(platform string, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	route := slackRoute
	if platform == "discord" {
		route = discordRoute
	}
	return &countingTransport{next: next, m: m, platform: platform, route: route}
}

type countingTransport struct {
	next     http.RoundTripper
	m        *Metrics
	platform string
	route    func(*http.Request) string
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	method := t.route(req)
	resp, err := t.next.RoundTrip(req)
	code := "error"
	if err == nil {
		code = strconv.Itoa(resp.StatusCode/100) + "xx"
		if resp.StatusCode == http.StatusTooManyRequests {
			t.m.apiLimited.WithLabelValues(t.platform, method).Inc()
		}
	}
	t.m.apiRequests.WithLabelValues(t.platform, method, code).Inc()
	return resp, err
}

// slackRoute is the Web API method of a request to .../api/<method>, else
// "files" (uploads and downloads go to Slack's file hosts).
func slackRoute(req *http.Request) string {
	p := req.URL.Path
	if i := strings.LastIndex(p, "/api/"); i >= 0 {
		name := p[i+len("/api/"):]
		if name != "" && !strings.Contains(name, "/") && len(name) <= 64 {
			return name
		}
	}
	return "files"
}

// discordRoute is the verb and REST route of a request to .../api/v<n>/…,
// with every id, token and emoji replaced; "cdn" for anything else.
func discordRoute(req *http.Request) string {
	p := req.URL.Path
	i := strings.Index(p, "/api/")
	if i < 0 {
		return "cdn"
	}
	segs := strings.Split(strings.Trim(p[i+len("/api/"):], "/"), "/")
	if len(segs) > 0 && strings.HasPrefix(segs[0], "v") {
		segs = segs[1:] // the API version
	}
	for j, s := range segs {
		prev := ""
		if j > 0 {
			prev = segs[j-1]
		}
		prev2 := ""
		if j > 1 {
			prev2 = segs[j-2]
		}
		switch {
		case isSnowflake(s):
			segs[j] = "{id}"
		case prev == "reactions":
			segs[j] = "{emoji}"
		case prev2 == "interactions" || prev2 == "webhooks":
			segs[j] = "{token}"
		}
	}
	return req.Method + " " + strings.Join(segs, "/")
}

func isSnowflake(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
