package slackfake_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"

	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

const signingSecret = "8f742231b10e8888abcd99yyyzzz85a5"

// received is one request as a bot verifying with slack-go saw it.
type received struct {
	status      int
	event       slackevents.EventsAPIEvent
	retryNum    string
	retryReason string
}

// eventsBot is a minimal `mode: http` bot: slack-go's verifier and parser.
type eventsBot struct {
	mu       sync.Mutex
	got      []received
	failNext int // answer 500 to this many verified requests
}

func (b *eventsBot) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := received{retryNum: r.Header.Get("X-Slack-Retry-Num"), retryReason: r.Header.Get("X-Slack-Retry-Reason")}
	defer func() {
		b.mu.Lock()
		b.got = append(b.got, rec)
		b.mu.Unlock()
	}()
	sv, err := slack.NewSecretsVerifier(r.Header, signingSecret)
	if err == nil {
		_, _ = sv.Write(body)
		err = sv.Ensure()
	}
	if err != nil {
		rec.status = http.StatusUnauthorized
		w.WriteHeader(rec.status)
		return
	}
	ev, err := slackevents.ParseEvent(body, slackevents.OptionNoVerifyToken())
	if err != nil {
		rec.status = http.StatusBadRequest
		w.WriteHeader(rec.status)
		return
	}
	rec.event = ev
	if ev.Type == slackevents.URLVerification {
		rec.status = http.StatusOK
		_ = json.NewEncoder(w).Encode(slackevents.ChallengeResponse{Challenge: ev.Data.(*slackevents.EventsAPIURLVerificationEvent).Challenge})
		return
	}
	b.mu.Lock()
	fail := b.failNext > 0
	b.failNext--
	b.mu.Unlock()
	if fail {
		rec.status = http.StatusInternalServerError
		w.WriteHeader(rec.status)
		return
	}
	rec.status = http.StatusOK
}

func (b *eventsBot) requests() []received {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]received(nil), b.got...)
}

func startEventsBot(t *testing.T) (*eventsBot, string) {
	bot := &eventsBot{}
	hs := httptest.NewServer(bot)
	t.Cleanup(hs.Close)
	return bot, hs.URL + "/slack/events"
}

func TestHTTPEventsSignedDelivery(t *testing.T) {
	bot, url := startEventsBot(t)
	srv := slackfake.New(t)
	srv.UseHTTPEvents(slackfake.HTTPEvents{URL: url, SigningSecret: signingSecret})

	v, err := srv.VerifyURL(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	var ch slackevents.ChallengeResponse
	if err := json.Unmarshal(v.Body, &ch); err != nil || v.StatusCode != 200 || ch.Challenge != v.Challenge {
		t.Errorf("url_verification answered %d %s, want 200 echoing %q", v.StatusCode, v.Body, v.Challenge)
	}

	ts := srv.Mention("C0DEV", "U0ALICE", "over http", "")
	if err := srv.WaitAllAcked(testContext(t)); err != nil {
		t.Fatal(err)
	}
	reqs := bot.requests()
	if len(reqs) != 3 {
		t.Fatalf("bot saw %d requests, want url_verification and two events", len(reqs))
	}
	if m, ok := reqs[1].event.InnerEvent.Data.(*slackevents.AppMentionEvent); !ok || m.TimeStamp != ts {
		t.Errorf("first event %#v, want app_mention %s", reqs[1].event.InnerEvent.Data, ts)
	}
	if m, ok := reqs[2].event.InnerEvent.Data.(*slackevents.MessageEvent); !ok || m.TimeStamp != ts {
		t.Errorf("second event %#v, want message %s", reqs[2].event.InnerEvent.Data, ts)
	}
	for _, a := range srv.Acks() {
		if a.StatusCode != 200 || a.Latency <= 0 {
			t.Errorf("ack %+v, want status 200 and a latency", a)
		}
	}
	for _, d := range srv.Deliveries() {
		if !d.HTTP || !d.Acked {
			t.Errorf("delivery %+v, want HTTP and acked", d)
		}
	}
}

func TestHTTPEventsTamperedSignaturesRejected(t *testing.T) {
	for _, tc := range []struct {
		name   string
		tamper slackfake.Tamper
	}{
		{"wrong secret", slackfake.TamperSignature},
		{"body changed", slackfake.TamperBody},
		{"stale timestamp", slackfake.TamperStaleTimestamp},
		{"no signature", slackfake.TamperNoSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bot, url := startEventsBot(t)
			srv := slackfake.New(t)
			srv.UseHTTPEvents(slackfake.HTTPEvents{URL: url, SigningSecret: signingSecret, Tamper: tc.tamper})
			srv.UserMessage("C0DEV", "U0ALICE", "forged?", "")
			d := srv.Deliveries()[0]
			ack, err := srv.WaitAck(testContext(t), d.ID)
			if err != nil {
				t.Fatal(err)
			}
			if ack.StatusCode != http.StatusUnauthorized {
				t.Errorf("bot answered %d, want 401", ack.StatusCode)
			}
			if got := srv.Deliveries()[0]; got.Acked {
				t.Errorf("delivery %+v counted acked, want not", got)
			}
			if reqs := bot.requests(); len(reqs) != 1 || reqs[0].status != http.StatusUnauthorized {
				t.Errorf("bot saw %+v, want one rejected request", reqs)
			}
		})
	}
}

func TestHTTPEventsRetryHeaders(t *testing.T) {
	bot, url := startEventsBot(t)
	bot.failNext = 1
	srv := slackfake.New(t, slackfake.WithRedelivery(20*time.Millisecond))
	srv.UseHTTPEvents(slackfake.HTTPEvents{URL: url, SigningSecret: signingSecret})
	srv.UserMessage("C0DEV", "U0ALICE", "retry me", "")
	if err := srv.WaitAllAcked(testContext(t)); err != nil {
		t.Fatal(err)
	}
	reqs := bot.requests()
	if len(reqs) != 2 {
		t.Fatalf("bot saw %d requests, want 2", len(reqs))
	}
	if reqs[0].status != 500 || reqs[0].retryNum != "" {
		t.Errorf("first request status %d retry %q, want 500 and no retry header", reqs[0].status, reqs[0].retryNum)
	}
	if reqs[1].retryNum != "1" || reqs[1].retryReason != "http_error" || reqs[1].status != 200 {
		t.Errorf("retry had X-Slack-Retry-Num %q reason %q status %d, want 1 http_error 200", reqs[1].retryNum, reqs[1].retryReason, reqs[1].status)
	}
	id1 := reqs[0].event.Data.(*slackevents.EventsAPICallbackEvent).EventID
	id2 := reqs[1].event.Data.(*slackevents.EventsAPICallbackEvent).EventID
	if id1 != id2 {
		t.Errorf("retry event_id %s, want %s", id2, id1)
	}
}

func TestSignMatchesSlackGoVerifier(t *testing.T) {
	body := []byte(`{"type":"event_callback"}`)
	now := time.Now().Unix()
	h := http.Header{}
	h.Set("X-Slack-Request-Timestamp", strconv.FormatInt(now, 10))
	h.Set("X-Slack-Signature", slackfake.Sign(signingSecret, now, body))
	sv, err := slack.NewSecretsVerifier(h, signingSecret)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = sv.Write(body)
	if err := sv.Ensure(); err != nil {
		t.Errorf("slack-go rejects Sign's signature: %v", err)
	}
	// The example from Slack's documentation.
	docBody := []byte("token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c")
	if got, want := slackfake.Sign(signingSecret, 1531420618, docBody), "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"; got != want {
		t.Errorf("Sign(doc example) = %s, want %s", got, want)
	}
}
