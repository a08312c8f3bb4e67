package discordfake_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
)

// apiClient speaks raw HTTP to the fake's REST API.
type apiClient struct {
	t    *testing.T
	fake *discordfake.Server
	auth string
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return m
}

func (r reply) list(t *testing.T) []map[string]any {
	t.Helper()
	var l []map[string]any
	if err := json.Unmarshal(r.body, &l); err != nil {
		t.Fatalf("body %q: %v", r.body, err)
	}
	return l
}

// code is Discord's error code in the body.
func (r reply) code(t *testing.T) int {
	t.Helper()
	c, _ := r.json(t)["code"].(float64)
	return int(c)
}

func newAPI(t *testing.T, fake *discordfake.Server) *apiClient {
	return &apiClient{t: t, fake: fake, auth: "Bot " + fake.Token()}
}

func (a *apiClient) do(method, path string, body any) reply {
	a.t.Helper()
	var rd io.Reader
	ctype := ""
	switch b := body.(type) {
	case nil:
	case string:
		rd, ctype = strings.NewReader(b), "application/json"
	default:
		rd, ctype = bytes.NewReader(mustMarshal(a.t, b)), "application/json"
	}
	return a.send(method, path, ctype, rd)
}

func (a *apiClient) send(method, path, ctype string, body io.Reader) reply {
	a.t.Helper()
	req, err := http.NewRequest(method, strings.TrimSuffix(a.fake.URL(), "/")+path, body)
	if err != nil {
		a.t.Fatal(err)
	}
	if a.auth != "" {
		req.Header.Set("Authorization", a.auth)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func (a *apiClient) post(channel, content string) string {
	a.t.Helper()
	r := a.do("POST", "/api/v9/channels/"+channel+"/messages", map[string]any{"content": content})
	if r.status != http.StatusOK {
		a.t.Fatalf("post: got %d %s, want 200", r.status, r.body)
	}
	return r.json(a.t)["id"].(string)
}

func TestRESTAuthAndUnknownRoutes(t *testing.T) {
	fake := discordfake.New(t, discordfake.WithSpecViolationsAllowed()) // sends what Discord refuses, on purpose
	api := newAPI(t, fake)
	anon := &apiClient{t: t, fake: fake}

	if r := anon.do("GET", "/api/v9/users/@me", nil); r.status != 401 || r.code(t) != 0 || r.json(t)["message"] != "401: Unauthorized" {
		t.Errorf("no token: got %d %s, want 401 Unauthorized", r.status, r.body)
	}
	r := anon.do("GET", "/api/v9/gateway", nil)
	if url, _ := r.json(t)["url"].(string); r.status != 200 || url != fake.GatewayURL() || !strings.HasPrefix(url, "ws://127.0.0.1:") {
		t.Errorf("gateway lookup: got %d %s, want 200 with the ws:// url", r.status, r.body)
	}
	if r := api.do("GET", "/api/v9/users/@me", nil); r.status != 200 || r.json(t)["id"] != fake.BotUserID() {
		t.Errorf("users/@me: got %d %s, want the bot", r.status, r.body)
	}
	if r := api.do("POST", "/api/v9/channels/1/pins/2", nil); r.status != 404 || r.json(t)["message"] != "404: Not Found" {
		t.Errorf("unknown route: got %d %s, want Discord's 404", r.status, r.body)
	}
	if u := fake.UnknownRoutes(); len(u) != 1 || u[0].Path != "/api/v9/channels/1/pins/2" || u[0].Method != "POST" {
		t.Errorf("unknown routes: got %+v, want the pins call", u)
	}
	if r := api.do("GET", "/api/v9/guilds/"+discordfake.DefaultGuildID+"/members/"+discordfake.AliceID, nil); r.status != 200 ||
		!slices.Contains(r.json(t)["roles"].([]any), any(discordfake.DevRoleID)) {
		t.Errorf("guild member: got %d %s, want alice with the dev role", r.status, r.body)
	}
	if r := api.do("GET", "/api/v9/guilds/"+discordfake.DefaultGuildID+"/members/42", nil); r.code(t) != 10007 {
		t.Errorf("unknown member: got %s, want 10007", r.body)
	}
	dm := api.do("POST", "/api/v9/users/@me/channels", map[string]any{"recipient_id": discordfake.BobID})
	if dm.status != 200 || dm.json(t)["id"] != fake.DMChannel(discordfake.BobID) || dm.json(t)["type"] != float64(1) {
		t.Errorf("open DM: got %d %s, want bob's DM channel", dm.status, dm.body)
	}
	reqs := fake.Requests()
	if first := reqs[0]; first.Authorized || first.Status != 401 || first.Route != "GET /api/v9/users/@me" {
		t.Errorf("first request record: got %+v, want the unauthorized users/@me", first)
	}
}

func TestRESTMessageRules(t *testing.T) {
	fake := discordfake.New(t, discordfake.WithSpecViolationsAllowed()) // sends what Discord refuses, on purpose
	api := newAPI(t, fake)
	ch := "/api/v9/channels/" + discordfake.DefaultChannelID + "/messages"

	long := strings.Repeat("é", 2001)
	r := api.do("POST", ch, map[string]any{"content": long})
	errs, _ := r.json(t)["errors"].(map[string]any)
	if r.status != 400 || r.code(t) != 50035 || !strings.Contains(fmt.Sprint(errs["content"]), "BASE_TYPE_MAX_LENGTH") {
		t.Errorf("2001 characters: got %d %s, want 50035 on content", r.status, r.body)
	}
	if r := api.do("POST", ch, map[string]any{"content": long[:len(long)-2]}); r.status != 200 {
		t.Errorf("2000 characters: got %d %s, want 200", r.status, r.body)
	}
	if r := api.do("POST", ch, map[string]any{"content": ""}); r.code(t) != 50006 {
		t.Errorf("empty message: got %s, want 50006", r.body)
	}
	if r := api.do("POST", "/api/v9/channels/404/messages", map[string]any{"content": "x"}); r.status != 404 || r.code(t) != 10003 {
		t.Errorf("unknown channel: got %d %s, want 404 10003", r.status, r.body)
	}
	if r := api.do("POST", ch, "{broken"); r.code(t) != 50109 {
		t.Errorf("broken JSON: got %s, want 50109", r.body)
	}
	if r := api.do("POST", ch, map[string]any{"content": "re", "message_reference": map[string]any{"message_id": "1"}}); r.code(t) != 50035 {
		t.Errorf("reply to unknown message: got %s, want 50035", r.body)
	}
	alice := fake.UserMessage(discordfake.DefaultChannelID, discordfake.AliceID, "mine")
	if r := api.do("PATCH", ch+"/"+alice.ID, map[string]any{"content": "yours"}); r.status != 403 || r.code(t) != 50005 {
		t.Errorf("edit someone else's message: got %d %s, want 403 50005", r.status, r.body)
	}
	if r := api.do("DELETE", ch+"/"+alice.ID, nil); r.status != 403 || r.code(t) != 50013 {
		t.Errorf("delete someone else's message without MANAGE_MESSAGES: got %d %s, want 403 50013", r.status, r.body)
	}
	reply := api.do("POST", ch, map[string]any{"content": "on it", "message_reference": map[string]any{"message_id": alice.ID}})
	if m := reply.json(t); m["type"] != float64(19) || m["message_reference"].(map[string]any)["message_id"] != alice.ID {
		t.Errorf("reply: got %s, want type 19 referencing %s", reply.body, alice.ID)
	}
	id := api.post(discordfake.DefaultChannelID, "x")
	if r := api.do("POST", ch+"/"+id+"/threads", map[string]any{"name": " "}); r.code(t) != 50035 {
		t.Errorf("blank thread name: got %s, want 50035", r.body)
	}
	if r := api.do("POST", ch+"/"+id+"/threads", map[string]any{"name": "t", "auto_archive_duration": 5}); r.code(t) != 50035 {
		t.Errorf("bad auto_archive_duration: got %s, want 50035", r.body)
	}
	th := api.do("POST", ch+"/"+id+"/threads", map[string]any{"name": "t"})
	if th.status != 201 {
		t.Fatalf("start thread: got %d %s, want 201", th.status, th.body)
	}
	if r := api.do("POST", "/api/v9/channels/"+id+"/messages/"+id+"/threads", map[string]any{"name": "nested"}); r.code(t) != 50024 {
		t.Errorf("thread inside a thread: got %s, want 50024", r.body)
	}
}

func TestRESTMessageContentIntentOff(t *testing.T) {
	fake := discordfake.New(t, discordfake.WithDisabledPrivilegedIntents(discordfake.IntentMessageContent))
	api := newAPI(t, fake)
	fake.UserMessage(discordfake.DefaultChannelID, discordfake.AliceID, "hidden")
	api.post(discordfake.DefaultChannelID, "own words")
	l := api.do("GET", "/api/v9/channels/"+discordfake.DefaultChannelID+"/messages", nil).list(t)
	if len(l) != 2 || l[0]["content"] != "own words" || l[1]["content"] != "" {
		t.Errorf("messages without MESSAGE_CONTENT: got %v, want the bot's content and alice's blanked", l)
	}
}

func TestRESTPagination(t *testing.T) {
	fake := discordfake.New(t, discordfake.WithSpecViolationsAllowed()) // sends what Discord refuses, on purpose
	api := newAPI(t, fake)
	var ids []string
	for i := range 5 {
		ids = append(ids, api.post(discordfake.DefaultChannelID, fmt.Sprint(i)))
	}
	get := func(q string) []string {
		r := api.do("GET", "/api/v9/channels/"+discordfake.DefaultChannelID+"/messages"+q, nil)
		var out []string
		for _, m := range r.list(t) {
			out = append(out, m["id"].(string))
		}
		return out
	}
	tests := []struct {
		query string
		want  []string
	}{
		{"", []string{ids[4], ids[3], ids[2], ids[1], ids[0]}},
		{"?limit=2", []string{ids[4], ids[3]}},
		{"?after=" + ids[0] + "&limit=2", []string{ids[2], ids[1]}},
		{"?after=" + ids[4], nil},
		{"?before=" + ids[3], []string{ids[2], ids[1], ids[0]}},
		{"?around=" + ids[2] + "&limit=3", []string{ids[3], ids[2], ids[1]}},
	}
	for _, tc := range tests {
		if got := get(tc.query); !slices.Equal(got, tc.want) {
			t.Errorf("GET messages%s: got %v, want %v", tc.query, got, tc.want)
		}
	}
	if r := api.do("GET", "/api/v9/channels/"+discordfake.DefaultChannelID+"/messages?limit=101", nil); r.code(t) != 50035 {
		t.Errorf("limit 101: got %s, want 50035", r.body)
	}
}

func TestRESTMultipart(t *testing.T) {
	fake := discordfake.New(t)
	api := newAPI(t, fake)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="payload_json"`)
	h.Set("Content-Type", "application/json")
	p, _ := mw.CreatePart(h)
	p.Write([]byte(`{"content":"two files"}`))
	for i, name := range []string{"a.txt", "b.txt"} {
		fw, _ := mw.CreateFormFile(fmt.Sprintf("files[%d]", i), name)
		fw.Write([]byte("data " + name))
	}
	mw.Close()
	r := api.send("POST", "/api/v9/channels/"+discordfake.DefaultChannelID+"/messages", mw.FormDataContentType(), &buf)
	if r.status != 200 {
		t.Fatalf("multipart post: got %d %s", r.status, r.body)
	}
	m := r.json(t)
	atts := m["attachments"].([]any)
	if len(atts) != 2 || atts[1].(map[string]any)["filename"] != "b.txt" || atts[0].(map[string]any)["size"] != float64(len("data a.txt")) {
		t.Fatalf("attachments: got %v, want a.txt and b.txt", atts)
	}
	first := atts[0].(map[string]any)["id"].(string)
	edit := api.do("PATCH", "/api/v9/channels/"+discordfake.DefaultChannelID+"/messages/"+m["id"].(string),
		map[string]any{"attachments": []any{map[string]any{"id": first}}})
	if got := edit.json(t)["attachments"].([]any); len(got) != 1 || got[0].(map[string]any)["id"] != first {
		t.Errorf("edit keeping one attachment: got %v, want only %s", got, first)
	}
	stored, _ := fake.Message(m["id"].(string))
	if len(stored.Attachments) != 1 || string(stored.Attachments[0].Data) != "data a.txt" {
		t.Errorf("stored attachments: got %+v, want a.txt", stored.Attachments)
	}
}

func TestRESTRateLimits(t *testing.T) {
	clock := discordfake.NewManualClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	rl := discordfake.DefaultRateLimits()
	rl.MessageRead = discordfake.Limit{} // the global part below reads a channel 50 times
	fake := discordfake.New(t, discordfake.WithClock(clock), discordfake.WithRateLimits(rl))
	api := newAPI(t, fake)
	id := api.post(discordfake.DefaultChannelID, "v0")
	other := api.post(discordfake.DefaultOtherChannelID, "w0")
	edit := func(ch, id string) reply {
		return api.do("PATCH", "/api/v9/channels/"+ch+"/messages/"+id, map[string]any{"content": "v"})
	}
	var bucket string
	for i := range 5 {
		r := edit(discordfake.DefaultChannelID, id)
		if r.status != 200 || r.header.Get("X-RateLimit-Limit") != "5" || r.header.Get("X-RateLimit-Remaining") != fmt.Sprint(4-i) ||
			r.header.Get("X-RateLimit-Reset-After") != "5.000" {
			t.Fatalf("edit %d: got %d limit %s remaining %s reset-after %s, want 200 5 %d 5.000", i+1, r.status,
				r.header.Get("X-RateLimit-Limit"), r.header.Get("X-RateLimit-Remaining"), r.header.Get("X-RateLimit-Reset-After"), 4-i)
		}
		if bucket = r.header.Get("X-RateLimit-Bucket"); bucket == "" {
			t.Fatalf("edit %d: no X-RateLimit-Bucket", i+1)
		}
	}
	clock.Advance(2 * time.Second)
	r := edit(discordfake.DefaultChannelID, id)
	body := r.json(t)
	if r.status != 429 || body["message"] != "You are being rate limited." || body["retry_after"] != 3.0 || body["global"] != false ||
		r.header.Get("Retry-After") != "3" || r.header.Get("X-RateLimit-Scope") != "user" || r.header.Get("X-RateLimit-Bucket") != bucket {
		t.Fatalf("6th edit within 5 s: got %d %s headers %v, want 429 retry_after 3", r.status, r.body, r.header)
	}
	if r := edit(discordfake.DefaultOtherChannelID, other); r.status != 200 || r.header.Get("X-RateLimit-Bucket") != bucket {
		t.Errorf("edit in another channel: got %d (bucket %s), want 200 in a bucket with the same hash", r.status, r.header.Get("X-RateLimit-Bucket"))
	}
	clock.Advance(3 * time.Second)
	if r := edit(discordfake.DefaultChannelID, id); r.status != 200 || r.header.Get("X-RateLimit-Remaining") != "4" {
		t.Errorf("edit after the window: got %d remaining %s, want 200 and a fresh window", r.status, r.header.Get("X-RateLimit-Remaining"))
	}
	if got := fake.RateLimited(); got != 1 {
		t.Errorf("RateLimited: got %d, want 1", got)
	}
	if m, _ := fake.Message(id); m.Edits != 6 {
		t.Errorf("edits applied: got %d, want 6 (the 429 changed nothing)", m.Edits)
	}

	// Global: 50 per second across routes; interaction callbacks are exempt.
	clock.Advance(time.Minute)
	in := fake.SlashCommand(discordfake.DefaultChannelID, discordfake.AliceID, "status", nil)
	for i := range 50 {
		if r := api.do("GET", "/api/v9/channels/"+discordfake.DefaultChannelID, nil); r.status != 200 {
			t.Fatalf("request %d of 50: got %d", i+1, r.status)
		}
	}
	r = api.do("GET", "/api/v9/users/@me", nil)
	if r.status != 429 || r.json(t)["global"] != true || r.header.Get("X-RateLimit-Global") != "true" || r.header.Get("X-RateLimit-Scope") != "global" {
		t.Errorf("51st request in a second: got %d %s %v, want a global 429", r.status, r.body, r.header)
	}
	ix, _ := fake.Interaction(in)
	cb := api.do("POST", "/api/v9/interactions/"+in+"/"+ix.Token+"/callback", map[string]any{"type": 5})
	if cb.status != 204 {
		t.Errorf("interaction callback during a global limit: got %d %s, want 204", cb.status, cb.body)
	}
}

func TestInteractionDeadlineAndTokenLifetime(t *testing.T) {
	clock := discordfake.NewManualClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	fake := discordfake.New(t, discordfake.WithClock(clock))
	api := newAPI(t, fake)
	s := restSession(t, fake, fake.Token())

	late := fake.SlashCommand(discordfake.DefaultChannelID, discordfake.AliceID, "code", map[string]any{"prompt": "x"})
	clock.Advance(3*time.Second + time.Millisecond)
	lin, _ := fake.Interaction(late)
	r := api.do("POST", "/api/v9/interactions/"+late+"/"+lin.Token+"/callback", map[string]any{"type": 5})
	if r.status != 404 || r.code(t) != 10062 || r.json(t)["message"] != "Unknown interaction" {
		t.Errorf("callback after 3 s: got %d %s, want 404 10062 Unknown interaction", r.status, r.body)
	}
	if lin, _ = fake.Interaction(late); lin.Responded || lin.RejectedCallbacks != 1 {
		t.Errorf("late interaction: got responded %v rejected %d, want not responded, 1 rejected", lin.Responded, lin.RejectedCallbacks)
	}
	if r := api.do("POST", "/api/v9/interactions/"+late+"/wrong/callback", map[string]any{"type": 5}); r.code(t) != 10062 {
		t.Errorf("callback with a wrong token: got %s, want 10062", r.body)
	}

	id := fake.SlashCommand(discordfake.DefaultChannelID, discordfake.AliceID, "code", map[string]any{"prompt": "y"})
	clock.Advance(2900 * time.Millisecond)
	in, _ := fake.Interaction(id)
	r = api.do("POST", "/api/v9/interactions/"+id+"/"+in.Token+"/callback", map[string]any{"type": 5})
	if r.status != 204 {
		t.Fatalf("callback at 2.9 s: got %d %s, want 204", r.status, r.body)
	}
	got, err := fake.WaitForInteractionResponse(ctxT(t), id)
	if err != nil || got.Latency != 2900*time.Millisecond {
		t.Errorf("latency: got %v (%v), want 2.9s", got.Latency, err)
	}

	// The first followup after a deferral fills in the thinking message.
	hook := "/api/v9/webhooks/" + fake.ApplicationID() + "/" + in.Token
	fu := api.do("POST", hook+"?wait=true", map[string]any{"content": "done"})
	if fu.status != 200 || fu.json(t)["id"] != got.Original.ID || fu.json(t)["content"] != "done" {
		t.Errorf("first followup after defer: got %d %s, want the original %s filled in", fu.status, fu.body, got.Original.ID)
	}
	if fu2 := api.do("POST", hook+"?wait=true", map[string]any{"content": "more"}); fu2.json(t)["id"] == got.Original.ID {
		t.Errorf("second followup: got the original's id, want a new message")
	}
	if r := api.do("POST", hook, map[string]any{"content": "no wait"}); r.status != 204 {
		t.Errorf("followup without wait: got %d, want 204", r.status)
	}
	if r := api.do("GET", hook+"/messages/@original", nil); r.status != 200 || r.json(t)["content"] != "done" {
		t.Errorf("GET @original: got %d %s, want done", r.status, r.body)
	}

	clock.Advance(15 * time.Minute)
	content := "too late"
	_, err = s.InteractionResponseEdit(&discordgo.Interaction{ID: id, Token: in.Token, AppID: fake.ApplicationID()},
		&discordgo.WebhookEdit{Content: &content})
	if restCode(t, err) != 50027 {
		t.Errorf("edit @original after 15 minutes: got %v, want 50027 Invalid Webhook Token", err)
	}
}

func TestCommandRegistrationRules(t *testing.T) {
	fake := discordfake.New(t, discordfake.WithSpecViolationsAllowed()) // sends what Discord refuses, on purpose
	api := newAPI(t, fake)
	base := "/api/v9/applications/" + fake.ApplicationID() + "/guilds/" + discordfake.DefaultGuildID + "/commands"
	opt := func(name string, required bool) map[string]any {
		return map[string]any{"type": 3, "name": name, "description": "d", "required": required}
	}
	tests := []struct {
		name string
		cmds []map[string]any
		path string // error path that must appear
	}{
		{"no description", []map[string]any{{"name": "code"}}, "description"},
		{"bad name", []map[string]any{{"name": "do it", "description": "d"}}, "name"},
		{"required after optional", []map[string]any{{"name": "code", "description": "d",
			"options": []any{opt("repo", false), opt("prompt", true)}}}, "required"},
		{"duplicate option", []map[string]any{{"name": "code", "description": "d",
			"options": []any{opt("a", false), opt("a", false)}}}, "name"},
		{"duplicate command", []map[string]any{{"name": "x", "description": "d"}, {"name": "x", "description": "d"}}, "1"},
		{"bad option type", []map[string]any{{"name": "x", "description": "d", "options": []any{map[string]any{"type": 42, "name": "o", "description": "d"}}}}, "type"},
	}
	for _, tc := range tests {
		r := api.do("PUT", base, tc.cmds)
		if r.status != 400 || r.code(t) != 50035 || !strings.Contains(string(r.body), `"`+tc.path+`"`) {
			t.Errorf("%s: got %d %s, want 50035 naming %q", tc.name, r.status, r.body, tc.path)
		}
	}
	if n := fake.CommandOverwrites(discordfake.DefaultGuildID); n != 0 {
		t.Errorf("rejected overwrites counted: got %d, want 0", n)
	}
	if r := api.do("PUT", "/api/v9/applications/999/commands", []any{}); r.status != 403 || r.code(t) != 50001 {
		t.Errorf("another application's commands: got %d %s, want 403 50001", r.status, r.body)
	}

	first := api.do("PUT", base, []any{map[string]any{"name": "help", "description": "Help"}}).list(t)
	second := api.do("PUT", base, []any{map[string]any{"name": "help", "description": "Show help"}}).list(t)
	if first[0]["id"] != second[0]["id"] || first[0]["version"] == second[0]["version"] {
		t.Errorf("changed description: got id %v→%v version %v→%v, want same id and a new version",
			first[0]["id"], second[0]["id"], first[0]["version"], second[0]["version"])
	}
	cid := second[0]["id"].(string)
	if r := api.do("GET", base+"/"+cid, nil); r.json(t)["description"] != "Show help" {
		t.Errorf("GET command: got %s", r.body)
	}
	if r := api.do("DELETE", base+"/"+cid, nil); r.status != 204 || len(fake.Commands(discordfake.DefaultGuildID)) != 0 {
		t.Errorf("DELETE command: got %d, %d left, want 204 and none", r.status, len(fake.Commands(discordfake.DefaultGuildID)))
	}
	if r := api.do("GET", base+"/"+cid, nil); r.code(t) != 10063 {
		t.Errorf("GET deleted command: got %s, want 10063", r.body)
	}
}

// recordingTB captures Errorf so a test can check the fake reports misuse.
type recordingTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recordingTB) Errorf(format string, args ...any) {
	r.mu.Lock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}

func TestSlashCommandChecksRegisteredOptions(t *testing.T) {
	rt := &recordingTB{TB: t}
	fake := discordfake.New(rt)
	api := newAPI(t, fake)
	api.do("PUT", "/api/v9/applications/"+fake.ApplicationID()+"/commands", []any{map[string]any{
		"name": "code", "description": "d", "options": []any{
			map[string]any{"type": 3, "name": "prompt", "description": "d", "required": true},
			map[string]any{"type": 4, "name": "n", "description": "d"},
		},
	}})
	ok := fake.SlashCommand(discordfake.DefaultChannelID, discordfake.AliceID, "code", map[string]any{"prompt": "p", "n": 3})
	in, _ := fake.Interaction(ok)
	if in.CommandID != fake.Commands("")[0].ID || len(rt.errs) != 0 {
		t.Errorf("registered global command: got command %s errors %v, want %s and none", in.CommandID, rt.errs, fake.Commands("")[0].ID)
	}
	fake.SlashCommand(discordfake.DefaultChannelID, discordfake.AliceID, "code", map[string]any{"prompt": "p", "bogus": 1})
	fake.SlashCommand(discordfake.DefaultChannelID, discordfake.AliceID, "code", map[string]any{"n": 1})
	fake.SlashCommand(discordfake.DefaultChannelID, discordfake.AliceID, "code", map[string]any{"prompt": "p", "n": 1.5})
	fake.UserMessage("404", discordfake.AliceID, "x")
	fake.UserMessage(discordfake.DefaultChannelID, "404", "x")
	if len(rt.errs) != 5 {
		t.Errorf("misuse reported: got %d errors %q, want 5", len(rt.errs), rt.errs)
	}
	if n := len(fake.Interactions()); n != 1 {
		t.Errorf("interactions after misuse: got %d, want 1", n)
	}
}

func TestWaitHelpers(t *testing.T) {
	fake := discordfake.New(t)
	s := restSession(t, fake, fake.Token())
	done := make(chan error, 1)
	go func() {
		m, err := s.ChannelMessageSend(discordfake.DefaultChannelID, "starter")
		if err == nil {
			_, err = s.MessageThreadStart(discordfake.DefaultChannelID, m.ID, "session", 60)
		}
		if err == nil {
			err = s.MessageReactionAdd(discordfake.DefaultChannelID, m.ID, "👀")
		}
		done <- err
	}()
	ctx := ctxT(t)
	m, err := fake.WaitForMessage(ctx, discordfake.DefaultChannelID, func(m discordfake.Message) bool { return m.Content == "starter" })
	if err != nil {
		t.Fatal(err)
	}
	th, err := fake.WaitForThread(ctx, discordfake.DefaultChannelID)
	if err != nil || th.ID != m.ID || th.Name != "session" {
		t.Fatalf("WaitForThread: got %+v (%v), want thread %s", th, err, m.ID)
	}
	if err := fake.WaitForReaction(ctx, discordfake.DefaultChannelID, m.ID, "👀", ""); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := fake.WaitForMessage(cancelled, discordfake.DefaultOtherChannelID, nil); err == nil ||
		!strings.Contains(err.Error(), discordfake.DefaultOtherChannelID) {
		t.Errorf("WaitForMessage on a cancelled context: got %v, want an error naming the channel", err)
	}
}

// Attachment links are signed and expire a day after they were handed out,
// as Discord's CDN links do; a message fetched again carries a fresh link,
// and a link whose signature does not match its expiry is refused.
func TestAttachmentLinksExpire(t *testing.T) {
	clock := discordfake.NewManualClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	fake := discordfake.New(t, discordfake.WithClock(clock))
	api := newAPI(t, fake)
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	m := fake.UserMessage(discordfake.DefaultChannelID, discordfake.AliceID, "log", discordfake.Attachment{Filename: "app.log", Data: []byte("boom")})
	link := m.Attachments[0].URL
	if q := mustParse(t, link).Query(); q.Get("ex") == "" || q.Get("is") == "" || q.Get("hm") == "" {
		t.Fatalf("link %s, want ex, is and hm", link)
	}
	if code, body := get(link); code != 200 || body != "boom" {
		t.Fatalf("fresh link: %d %q, want 200 boom", code, body)
	}
	forged := mustParse(t, link)
	q := forged.Query()
	q.Set("ex", strconv.FormatInt(clock.Now().Add(48*time.Hour).Unix(), 16))
	forged.RawQuery = q.Encode()
	if code, _ := get(forged.String()); code != 404 {
		t.Errorf("link with a later ex and the old hm: %d, want 404", code)
	}
	clock.Advance(discordfake.AttachmentURLLifetime + time.Second)
	if code, body := get(link); code != 404 || !strings.Contains(body, "no longer available") {
		t.Errorf("link after a day: %d %q, want 404 no longer available", code, body)
	}
	r := api.do("GET", "/api/v9/channels/"+discordfake.DefaultChannelID+"/messages/"+m.ID, nil)
	var got struct {
		Attachments []struct {
			URL string `json:"url"`
		} `json:"attachments"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil || len(got.Attachments) != 1 {
		t.Fatalf("fetched message %s: %v", r.body, err)
	}
	if code, body := get(got.Attachments[0].URL); code != 200 || body != "boom" {
		t.Errorf("the refetched message's link: %d %q, want 200 boom", code, body)
	}
}

func mustParse(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
