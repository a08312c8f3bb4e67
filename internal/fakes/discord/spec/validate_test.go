package discordspec_test

import (
	"net/url"
	"strings"
	"testing"

	discordspec "github.com/threadsmith/threadsmith/internal/fakes/discord/spec"
)

func discord(t *testing.T) *discordspec.Spec {
	t.Helper()
	s, err := discordspec.Discord()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// What Discord accepts passes; each request Discord refuses is refused with
// a reason naming the field.
func TestCheckAgainstDiscordsDescription(t *testing.T) {
	s := discord(t)
	const ch, msg = "/channels/100000000000000001/messages", "/channels/100000000000000001/messages/100000000000000002"
	good := []struct {
		method, path, query, body string
	}{
		{"POST", ch, "", `{"content":"hi","allowed_mentions":{"parse":[]},"flags":4}`},
		{"POST", ch, "", `{"content":"hi","nonce":"abc","enforce_nonce":true}`},
		{"GET", ch, "limit=100&after=100000000000000003", ``},
		{"PATCH", msg, "", `{"content":"edited","components":[]}`},
		{"POST", msg + "/threads", "", `{"name":"a thread","auto_archive_duration":1440}`},
		{"PUT", msg + "/reactions/%F0%9F%91%80/@me", "", ``},
		{"DELETE", msg + "/reactions/%F0%9F%91%80/@me", "", ``},
		{"DELETE", msg + "/reactions/%F0%9F%91%80/100000000000000009", "", ``},
		{"POST", "/channels/100000000000000001/typing", "", ``},
		{"POST", "/users/@me/channels", "", `{"recipient_id":"100000000000000004"}`},
		{"POST", "/interactions/100000000000000005/tok.en/callback", "", `{"type":5}`},
		{"POST", "/interactions/100000000000000005/tok.en/callback", "", `{"type":4,"data":{"content":"x","flags":64}}`},
		{"PATCH", "/webhooks/100000000000000006/tok.en/messages/@original", "", `{"content":"done"}`},
		{"GET", "/gateway/bot", "", ``},
	}
	for _, g := range good {
		q, _ := url.ParseQuery(g.query)
		if err := s.Check(g.method, g.path, q, []byte(g.body)); err != nil {
			t.Errorf("%s %s %s: %v, want accepted", g.method, g.path, g.body, err)
		}
	}
	bad := []struct {
		method, path, query, body, want string
	}{
		{"GET", "/channels/100000000000000001/nonsense", "", ``, "no such path"},
		{"PUT", ch, "", `{"content":"x"}`, "no PUT operation"},
		{"POST", ch, "", `{"content":` + `"` + strings.Repeat("x", 4001) + `"}`, "body.content: 4001 characters"},
		{"POST", ch, "", `{"content":5}`, "body.content: is integer, want string or null"},
		{"POST", ch, "", `{"embeds":[{},{},{},{},{},{},{},{},{},{},{}]}`, "body.embeds: 11 items"},
		{"POST", ch, "", `{"allowed_mentions":{"parse":["users","users"]}}`, "are equal"},
		{"POST", ch, "", `{"allowed_mentions":{"parse":["nobody"]}}`, "body.allowed_mentions"},
		{"POST", ch, "", `{"nonce":"` + strings.Repeat("n", 26) + `"}`, "body.nonce"},
		{"POST", msg + "/threads", "", `{"name":"x","rate_limit_per_user":21601}`, "body.rate_limit_per_user: 21601 is over the maximum 21600"},
		{"POST", msg + "/threads", "", `{"auto_archive_duration":1440}`, "name is required"},
		{"POST", msg + "/threads", "", `{"name":"` + strings.Repeat("t", 101) + `"}`, "body.name: 101 characters"},
		{"POST", msg + "/threads", "", `{"name":"x","auto_archive_duration":5}`, "body.auto_archive_duration"},
		{"POST", msg + "/threads", "", ``, "body: required"},
		{"GET", ch, "limit=101", ``, "query limit: 101 is over the maximum 100"},
		{"GET", "/channels/general/messages", "", ``, `path channel_id: "general" does not match`},
		{"PUT", msg + "/reactions/%F0%9F%91%80/100000000000000009", "", ``, "no PUT operation"},
		{"POST", "/interactions/100000000000000005/tok.en/callback", "", `{"type":42}`, "matches none of anyOf"},
		{"POST", "/interactions/100000000000000005/tok.en/callback", "", `{}`, "matches none of anyOf"},
		{"POST", ch, "", `{"content":"x"`, "invalid JSON"},
	}
	for _, b := range bad {
		q, _ := url.ParseQuery(b.query)
		err := s.Check(b.method, b.path, q, []byte(b.body))
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s %s ?%s %.60s: %v, want an error with %q", b.method, b.path, b.query, b.body, err, b.want)
		}
	}
}

// The keywords Discord's description does not use on the fake's routes
// today (additionalProperties: false, oneOf matching twice, minItems,
// maxProperties, const) are checked as JSON Schema says.
func TestCheckSchemaKeywords(t *testing.T) {
	s, err := discordspec.Parse([]byte(`{"openapi":"3.1.0","paths":{"/things/{id}":{
		"parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"integer","minimum":1}}],
		"post":{"parameters":[{"name":"must","in":"query","required":true,"schema":{"type":"boolean"}}],
		"requestBody":{"required":true,"content":{"application/json":{"schema":{"$ref":"#/components/schemas/Thing"}}}}}}},
		"components":{"schemas":{"Thing":{"type":"object","additionalProperties":false,"maxProperties":3,
		"properties":{"kind":{"const":"thing"},"tags":{"type":"array","minItems":1,"items":{"type":"string","minLength":2}},
		"n":{"oneOf":[{"type":"integer"},{"type":"number"}]},"extra":{"type":"string"},"i":{"type":"integer","format":"int32"}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ok := url.Values{"must": {"true"}}
	if err := s.Check("POST", "/things/7", ok, []byte(`{"kind":"thing","tags":["ab"],"n":1.5}`)); err != nil {
		t.Errorf("valid thing: %v", err)
	}
	for body, want := range map[string]string{
		`{"kind":"thing","color":"red"}`: "property color is not allowed",
		`{"kind":"other"}`:               `is "other", want "thing"`,
		`{"tags":[]}`:                    "0 items, at least 1",
		`{"tags":["a"]}`:                 "1 characters, at least 2",
		`{"n":3}`:                        "matches 2 of oneOf",
		`{"kind":"thing","tags":["ab"],"n":1,"extra":""}`: "4 properties, at most 3",
	} {
		if err := s.Check("POST", "/things/7", ok, []byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
	if err := s.Check("POST", "/things/0", ok, []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "path id: 0 is under the minimum 1") {
		t.Errorf("id 0: %v", err)
	}
	if err := s.Check("POST", "/things/7", nil, []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "query must: required") {
		t.Errorf("no query: %v", err)
	}
	if err := s.Check("POST", "/things/7", url.Values{"must": {"maybe"}}, []byte(`{}`)); err == nil || !strings.Contains(err.Error(), "query must: is string, want boolean") {
		t.Errorf("query maybe: %v", err)
	}
}
