package discordfake_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
)

func TestNotifiedHonoursAllowedMentions(t *testing.T) {
	const content = "<@1> <@!2> <@&3> @everyone `<@4>`"
	for _, tc := range []struct {
		name  string
		am    *discordfake.AllowedMentions
		users []string
		roles []string
		all   bool
	}{
		{"no allowed_mentions: everything", nil, []string{"1", "2", "4"}, []string{"3"}, true},
		{"parse nothing", &discordfake.AllowedMentions{}, nil, nil, false},
		{"users only", &discordfake.AllowedMentions{Parse: []string{"users"}}, []string{"1", "2", "4"}, nil, false},
		{"one user", &discordfake.AllowedMentions{Users: []string{"2", "9"}}, []string{"2"}, nil, false},
		{"everyone", &discordfake.AllowedMentions{Parse: []string{"everyone"}, Roles: []string{"3"}}, nil, []string{"3"}, true},
	} {
		got := discordfake.Notified(content, tc.am)
		if !slices.Equal(got.Users, tc.users) || !slices.Equal(got.Roles, tc.roles) || got.Everyone != tc.all {
			t.Errorf("%s: got %+v, want users %v roles %v everyone %v", tc.name, got, tc.users, tc.roles, tc.all)
		}
	}
}

func TestNoticesAndAllowedMentionsChecks(t *testing.T) {
	fake := discordfake.New(t)
	api := newAPI(t, fake)
	ch := discordfake.DefaultChannelID
	path := "/api/v9/channels/" + ch + "/messages"

	quiet := api.do("POST", path, map[string]any{"content": "hi <@" + discordfake.AliceID + "> @here", "allowed_mentions": map[string]any{"parse": []string{}}})
	if quiet.status != http.StatusOK {
		t.Fatalf("post: %d %s", quiet.status, quiet.body)
	}
	loud := api.do("POST", path, map[string]any{"content": "hi <@" + discordfake.AliceID + "> @here"})
	bad := api.do("POST", path, map[string]any{"content": "x", "allowed_mentions": map[string]any{"parse": []string{"users"}, "users": []string{discordfake.AliceID}}})
	if bad.status != http.StatusBadRequest || bad.code(t) != 50035 {
		t.Errorf("parse users with a users list: %d %s, want 400 50035", bad.status, bad.body)
	}
	id := quiet.json(t)["id"].(string)
	api.do("PATCH", path+"/"+id, map[string]any{"content": "now <@" + discordfake.BobID + ">", "allowed_mentions": map[string]any{"users": []string{discordfake.BobID}}})

	got := fake.Notices()
	if len(got) != 2 {
		t.Fatalf("notices %+v, want 2 (the post without allowed_mentions, the edit allowing bob)", got)
	}
	if n := got[0]; n.MessageID != loud.json(t)["id"] || !n.Everyone || !slices.Equal(n.Users, []string{discordfake.AliceID}) || n.Edit {
		t.Errorf("notice 0 = %+v, want alice and everyone for the post without allowed_mentions", n)
	}
	if n := got[1]; n.MessageID != id || !n.Edit || !slices.Equal(n.Users, []string{discordfake.BobID}) {
		t.Errorf("notice 1 = %+v, want bob for the edit", n)
	}
}

func TestEnforcedNonceCreatesOnce(t *testing.T) {
	fake := discordfake.New(t, discordfake.WithSpecViolationsAllowed()) // sends what Discord refuses, on purpose
	api := newAPI(t, fake)
	path := "/api/v9/channels/" + discordfake.DefaultChannelID + "/messages"
	body := map[string]any{"content": "once", "nonce": "k1", "enforce_nonce": true}

	fake.LoseResponseNext("POST /api/v9/channels/{channel}/messages")
	req, _ := http.NewRequest("POST", strings.TrimSuffix(fake.URL(), "/")+path, strings.NewReader(`{"content":"once","nonce":"k1","enforce_nonce":true}`))
	req.Header.Set("Authorization", "Bot "+fake.Token())
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a lost response answered %s", resp.Status)
	}
	again := api.do("POST", path, body)
	if again.status != http.StatusOK {
		t.Fatalf("retry: %d %s", again.status, again.body)
	}
	var count int
	for _, m := range fake.Messages(discordfake.DefaultChannelID) {
		if m.Content == "once" {
			count++
			if m.ID != again.json(t)["id"] {
				t.Errorf("retry returned %v, want the message made by the lost request %s", again.json(t)["id"], m.ID)
			}
		}
	}
	if count != 1 {
		t.Errorf("%d messages with the nonce, want 1", count)
	}
	// Without enforce_nonce a nonce does not deduplicate.
	api.do("POST", path, map[string]any{"content": "twice", "nonce": "k2"})
	api.do("POST", path, map[string]any{"content": "twice", "nonce": "k2"})
	if long := api.do("POST", path, map[string]any{"content": "x", "nonce": "12345678901234567890123456"}); long.status != http.StatusBadRequest {
		t.Errorf("a 26-character nonce: %d, want 400", long.status)
	}
	if reqs := fake.Requests(); !slices.ContainsFunc(reqs, func(r discordfake.Request) bool { return r.Lost }) {
		t.Error("no request recorded as lost")
	}
}

// Components Discord refuses are refused: what a message's buttons may be.
func TestComponentsChecks(t *testing.T) {
	fake := discordfake.New(t, discordfake.WithSpecViolationsAllowed()) // sends what Discord refuses, on purpose
	api := newAPI(t, fake)
	path := "/api/v9/channels/" + discordfake.DefaultChannelID + "/messages"
	row := func(buttons ...map[string]any) []any {
		return []any{map[string]any{"type": 1, "components": buttons}}
	}
	button := func(style int, label, id, url string) map[string]any {
		b := map[string]any{"type": 2, "style": style, "label": label}
		if id != "" {
			b["custom_id"] = id
		}
		if url != "" {
			b["url"] = url
		}
		return b
	}
	six := make([]map[string]any, 6)
	for i := range six {
		six[i] = button(2, "b", strings.Repeat("x", i+1), "")
	}
	for _, tc := range []struct {
		name       string
		components []any
		ok         bool
	}{
		{"a command button and a link", row(button(4, "Stop", "stop", ""), button(5, "Open PR", "", "https://forge.example/pr/1")), true},
		{"a discord: link", row(button(5, "Open", "", "discord://-/channels/1/2")), true},
		{"an emoji instead of a label", row(map[string]any{"type": 2, "style": 2, "custom_id": "e", "emoji": map[string]any{"name": "🛑"}}), true},
		{"no label nor emoji", row(button(2, "", "stop", "")), false},
		{"a label over 80", row(button(2, strings.Repeat("l", 81), "stop", "")), false},
		{"a link without url", row(button(5, "Open", "", "")), false},
		{"a link with a custom_id", row(button(5, "Open", "pr", "https://a.io")), false},
		{"a link over 512", row(button(5, "Open", "", "https://a.io/"+strings.Repeat("p", 500))), false},
		{"a javascript: link", row(button(5, "Open", "", "javascript:alert(1)")), false},
		{"a command with a url", row(button(2, "Stop", "stop", "https://a.io")), false},
		{"a repeated custom_id", row(button(2, "a", "stop", ""), button(2, "b", "stop", "")), false},
		{"six buttons in a row", row(six...), false},
		{"an empty row", row(), false},
	} {
		r := api.do("POST", path, map[string]any{"content": "x", "components": tc.components})
		if got := r.status == http.StatusOK; got != tc.ok {
			t.Errorf("%s: %d %s, want ok %v", tc.name, r.status, r.body, tc.ok)
		} else if !tc.ok && r.code(t) != 50035 {
			t.Errorf("%s: code %d, want 50035", tc.name, r.code(t))
		}
	}
}

// errorRecorder is a test the fake reports to, keeping its errors instead of
// failing the real test.
type errorRecorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *errorRecorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func (r *errorRecorder) errors() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.errs)
}

// A request Discord's OpenAPI description rejects fails the test that made
// it and gets Discord's 400; one it accepts passes untouched.
func TestRequestsAreCheckedAgainstDiscordsDescription(t *testing.T) {
	rec := &errorRecorder{TB: t}
	fake := discordfake.New(rec)
	api := &apiClient{t: t, fake: fake, auth: "Bot " + fake.Token()}
	msgs := "/api/v9/channels/" + discordfake.DefaultChannelID + "/messages"
	m := api.do("POST", msgs, map[string]any{"content": "hello"}).json(t)
	if errs := rec.errors(); len(errs) != 0 {
		t.Fatalf("a valid message failed the test: %v", errs)
	}
	thread := msgs + "/" + m["id"].(string) + "/threads"
	r := api.do("POST", thread, map[string]any{"name": strings.Repeat("n", 101)})
	if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "50035") {
		t.Errorf("a thread name of 101: %d %s, want 400 50035", r.status, r.body)
	}
	if got := fake.Threads(); len(got) != 0 {
		t.Errorf("the refused request made threads %v", got)
	}
	api.do("GET", msgs+"?limit=0", nil)
	api.do("GET", "/api/v9/channels/"+discordfake.DefaultChannelID+"/pins/1", nil)
	errs := rec.errors()
	want := []string{"body.name: 101 characters, at most 100", "query limit: 0 is under the minimum 1", "no such path"}
	if len(errs) != len(want) {
		t.Fatalf("test errors = %q, want %d", errs, len(want))
	}
	for i, w := range want {
		if !strings.Contains(errs[i], w) || !strings.Contains(errs[i], "OpenAPI") {
			t.Errorf("error %d = %q, want it to name %q", i, errs[i], w)
		}
	}
	if got := fake.SpecViolations(); len(got) != 3 {
		t.Errorf("SpecViolations = %q, want 3", got)
	}
}

// Every route the bot calls has its bucket: past its budget Discord answers
// 429 with the route's X-RateLimit-* headers and a JSON body with
// retry_after and global false, and the window reopens on the fake's clock.
func TestEveryRouteTheBotCallsIsRateLimited(t *testing.T) {
	clock := discordfake.NewManualClock(time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC))
	rl := discordfake.DefaultRateLimits()
	rl.Global = discordfake.Limit{}
	fake := discordfake.New(t, discordfake.WithClock(clock), discordfake.WithRateLimits(rl))
	api := newAPI(t, fake)
	ch := "/api/v9/channels/" + discordfake.DefaultChannelID
	var roots []string
	for range 7 {
		roots = append(roots, api.post(discordfake.DefaultChannelID, "root"))
		clock.Advance(5 * time.Second)
	}
	in := fake.SlashCommand(discordfake.DefaultChannelID, discordfake.AliceID, "status", nil)
	ix, _ := fake.Interaction(in)
	if r := api.do("POST", "/api/v9/interactions/"+in+"/"+ix.Token+"/callback", map[string]any{"type": 5}); r.status != 204 {
		t.Fatalf("deferring the interaction: %d %s", r.status, r.body)
	}
	clock.Advance(5 * time.Second)
	hook := "/api/v9/webhooks/" + discordfake.DefaultApplicationID + "/" + ix.Token
	routes := []struct {
		name, method string
		path         func(i int) string
		body         any
		limit        discordfake.Limit
	}{
		{"typing", "POST", func(int) string { return ch + "/typing" }, nil, rl.Typing},
		{"message reads", "GET", func(int) string { return ch + "/messages?limit=50" }, nil, rl.MessageRead},
		{"one message", "GET", func(int) string { return ch + "/messages/" + roots[0] }, nil, rl.MessageRead},
		{"thread creation", "POST", func(i int) string { return ch + "/messages/" + roots[i] + "/threads" }, map[string]any{"name": "t"}, rl.ThreadCreate},
		{"DMs", "POST", func(int) string { return "/api/v9/users/@me/channels" }, map[string]any{"recipient_id": discordfake.AliceID}, rl.DM},
		{"members", "GET", func(int) string {
			return "/api/v9/guilds/" + discordfake.DefaultGuildID + "/members/" + discordfake.AliceID
		}, nil, rl.Members},
		{"interaction callbacks", "POST", func(int) string { return "/api/v9/interactions/" + in + "/" + ix.Token + "/callback" }, map[string]any{"type": 5}, rl.Interaction},
		{"followup edits", "PATCH", func(int) string { return hook + "/messages/@original" }, map[string]any{"content": "done"}, rl.Webhook},
		{"followups", "POST", func(int) string { return hook }, map[string]any{"content": "more"}, rl.Webhook},
		{"commands", "GET", func(int) string { return "/api/v9/applications/" + discordfake.DefaultApplicationID + "/commands" }, nil, rl.Commands},
	}
	for _, rt := range routes {
		if !(rt.limit.Requests > 0 && rt.limit.Window > 0) {
			t.Errorf("%s: no default limit", rt.name)
			continue
		}
		var bucket string
		for i := range rt.limit.Requests {
			r := api.do(rt.method, rt.path(i), rt.body)
			if r.status == 429 || r.header.Get("X-RateLimit-Limit") != fmt.Sprint(rt.limit.Requests) ||
				r.header.Get("X-RateLimit-Remaining") != fmt.Sprint(rt.limit.Requests-1-i) {
				t.Fatalf("%s: request %d got %d limit %q remaining %q", rt.name, i+1, r.status,
					r.header.Get("X-RateLimit-Limit"), r.header.Get("X-RateLimit-Remaining"))
			}
			bucket = r.header.Get("X-RateLimit-Bucket")
		}
		r := api.do(rt.method, rt.path(rt.limit.Requests), rt.body)
		want := rt.limit.Window.Seconds()
		if r.status != 429 {
			t.Fatalf("%s: request %d of a budget of %d got %d, want 429", rt.name, rt.limit.Requests+1, rt.limit.Requests, r.status)
		}
		body := r.json(t)
		if body["retry_after"] != want || body["global"] != false || r.header.Get("X-RateLimit-Bucket") != bucket || bucket == "" ||
			r.header.Get("X-RateLimit-Remaining") != "0" || r.header.Get("Retry-After") == "" || r.header.Get("X-RateLimit-Scope") != "user" {
			t.Errorf("%s: 429 %s headers %v, want retry_after %v, global false, the route's bucket", rt.name, r.body, r.header, want)
		}
		clock.Advance(rt.limit.Window)
		if r := api.do(rt.method, rt.path(rt.limit.Requests), rt.body); r.status == 429 {
			t.Errorf("%s: still 429 after the window", rt.name)
		}
		clock.Advance(rt.limit.Window)
	}
	// Buckets split by channel: typing elsewhere is not limited by #general's.
	for range rl.Typing.Requests {
		api.do("POST", ch+"/typing", nil)
	}
	if r := api.do("POST", "/api/v9/channels/"+discordfake.DefaultOtherChannelID+"/typing", nil); r.status != 204 {
		t.Errorf("typing in another channel: %d, want 204", r.status)
	}
}

// String selects Discord refuses are refused: a row of its own, 1 to 25
// options, labels and values of 1 to 100 characters, unique values.
func TestSelectChecks(t *testing.T) {
	fake := discordfake.New(t, discordfake.WithSpecViolationsAllowed()) // sends what Discord refuses, on purpose
	api := newAPI(t, fake)
	path := "/api/v9/channels/" + discordfake.DefaultChannelID + "/messages"
	menu := func(n int, edit func(opts []map[string]any)) map[string]any {
		opts := make([]map[string]any, n)
		for i := range opts {
			opts[i] = map[string]any{"label": fmt.Sprintf("repo %d", i), "value": fmt.Sprintf("r%d", i), "description": ""}
		}
		if edit != nil {
			edit(opts)
		}
		return map[string]any{"type": 3, "custom_id": "repo", "placeholder": "Choose", "min_values": 1, "max_values": 1, "options": opts}
	}
	row := func(cs ...map[string]any) map[string]any { return map[string]any{"type": 1, "components": cs} }
	button := map[string]any{"type": 2, "style": 2, "label": "Stop", "custom_id": "stop"}
	for _, tc := range []struct {
		name       string
		components []any
		ok         bool
	}{
		{"25 options, and buttons in another row", []any{row(menu(25, nil)), row(button)}, true},
		{"26 options", []any{row(menu(26, nil))}, false},
		{"no option", []any{row(menu(0, nil))}, false},
		{"a button beside the menu", []any{row(menu(2, nil), button)}, false},
		{"a label over 100", []any{row(menu(2, func(o []map[string]any) { o[0]["label"] = strings.Repeat("l", 101) }))}, false},
		{"a value over 100", []any{row(menu(2, func(o []map[string]any) { o[0]["value"] = strings.Repeat("v", 101) }))}, false},
		{"a repeated value", []any{row(menu(2, func(o []map[string]any) { o[1]["value"] = "r0" }))}, false},
		{"the menu's id on a button too", []any{row(menu(2, nil)), row(map[string]any{"type": 2, "style": 2, "label": "x", "custom_id": "repo"})}, false},
	} {
		r := api.do("POST", path, map[string]any{"content": "x", "components": tc.components})
		if got := r.status == http.StatusOK; got != tc.ok {
			t.Errorf("%s: %d %s, want ok %v", tc.name, r.status, r.body, tc.ok)
		} else if !tc.ok && r.code(t) != 50035 {
			t.Errorf("%s: code %d, want 50035", tc.name, r.code(t))
		}
	}
}
