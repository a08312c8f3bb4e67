package discordspec_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
	discordspec "github.com/threadsmith/threadsmith/internal/fakes/discord/spec"
)

// BenchmarkCheckMessageCreate is the check of one message the bot posts:
// content, allowed_mentions, a nonce and a row of buttons.
func BenchmarkCheckMessageCreate(b *testing.B) {
	s, err := discordspec.Discord()
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"content":"` + strings.Repeat("x", 1500) + `","allowed_mentions":{"parse":[]},"nonce":"k1","enforce_nonce":true,` +
		`"components":[{"type":1,"components":[{"type":2,"style":2,"label":"diff","custom_id":"diff:1"},{"type":2,"style":5,"label":"compare","url":"https://example.com/c"}]}]}`)
	for b.Loop() {
		if err := s.Check("POST", "/channels/100000000000000001/messages", nil, body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFakeMessageCreate is the same post through the fake Discord, the
// check included: what a test pays per request.
func BenchmarkFakeMessageCreate(b *testing.B) {
	fake := discordfake.New(b)
	url := strings.TrimSuffix(fake.URL(), "/") + "/api/v9/channels/" + discordfake.DefaultChannelID + "/messages"
	body := `{"content":"` + strings.Repeat("x", 1500) + `","allowed_mentions":{"parse":[]},` +
		`"components":[{"type":1,"components":[{"type":2,"style":2,"label":"diff","custom_id":"diff:1"}]}]}`
	for b.Loop() {
		req := httptest.NewRequest("POST", url, strings.NewReader(body))
		req.RequestURI = ""
		req.Header.Set("Authorization", "Bot "+fake.Token())
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			b.Fatal(resp.Status, err)
		}
		resp.Body.Close()
	}
}
