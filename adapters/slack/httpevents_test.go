package slack

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/threadsmith/threadsmith/chat"
	slackfake "github.com/threadsmith/threadsmith/internal/fakes/slack"
)

const signingSecret = "8f742231b10e8888abcd99yyyzzz85a5"

func TestHTTPEventsSignedMentionIsReceivedThenAcked(t *testing.T) {
	srv := slackfake.New(t)
	h := newRecorder()
	startHTTP(t, srv, h, signingSecret, slackfake.TamperNone)

	ts := srv.Mention("C0DEV", "U0ALICE", "!help", "")
	in := h.nextFor(t, ts)
	if in.Text != "!help" || !in.Mention || in.Thread.Thread != ts || in.Thread.Team != srv.TeamID() {
		t.Errorf("inbound = %+v, want the stripped mention rooted at %s", in, ts)
	}
	if err := srv.WaitAllAcked(testContext(t)); err != nil {
		t.Fatal(err)
	}
	for _, ack := range srv.Acks() {
		if ack.StatusCode != http.StatusOK {
			t.Errorf("ack of %s answered %d, want 200", ack.EventID, ack.StatusCode)
		}
	}
	if got := len(h.Accepted()); got != 1 {
		t.Errorf("accepted %d, want 1", got)
	}
}

func TestHTTPEventsBadSignaturesAre401AndNothingRuns(t *testing.T) {
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
			srv := slackfake.New(t)
			h := newRecorder()
			startHTTP(t, srv, h, signingSecret, tc.tamper)
			ctx := testContext(t)

			srv.Mention("C0DEV", "U0ALICE", "rm -rf /", "")
			v, err := srv.VerifyURL(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if v.StatusCode != http.StatusUnauthorized || bytes.Contains(v.Body, []byte(v.Challenge)) {
				t.Errorf("url_verification answered %d %q, want 401 without the challenge", v.StatusCode, v.Body)
			}
			ds := srv.Deliveries()
			if len(ds) != 2 {
				t.Fatalf("deliveries %+v, want the mention's two events", ds)
			}
			for _, d := range ds {
				ack, err := srv.WaitAck(ctx, d.ID)
				if err != nil {
					t.Fatal(err)
				}
				if ack.StatusCode != http.StatusUnauthorized {
					t.Errorf("%s event answered %d, want 401", d.EventType, ack.StatusCode)
				}
			}
			if got := h.Calls(); len(got) != 0 {
				t.Errorf("Receive called %d times with bad signatures, want 0", len(got))
			}
		})
	}
}

func TestHTTPEventsURLVerification(t *testing.T) {
	srv := slackfake.New(t)
	startHTTP(t, srv, newRecorder(), signingSecret, slackfake.TamperNone)
	v, err := srv.VerifyURL(testContext(t))
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ Challenge string }
	if err := json.Unmarshal(v.Body, &body); err != nil || v.StatusCode != http.StatusOK || body.Challenge != v.Challenge {
		t.Errorf("url_verification answered %d %s (%v), want 200 with challenge %s", v.StatusCode, v.Body, err, v.Challenge)
	}
}

func TestHTTPEventsRetryAfterFailedReceive(t *testing.T) {
	srv := slackfake.New(t, slackfake.WithRedelivery(20*time.Millisecond))
	h := newRecorder()
	failed := false
	h.setFail(func(in chat.Inbound) error {
		if !failed {
			failed = true
			return errStore
		}
		return nil
	})
	startHTTP(t, srv, h, signingSecret, slackfake.TamperNone)

	ts := srv.UserMessage("C0DEV", "U0ALICE", "keep me", "")
	first, second := h.nextFor(t, ts), h.nextFor(t, ts)
	if first.EventID != second.EventID {
		t.Errorf("retry carries event %s, want %s", second.EventID, first.EventID)
	}
	if _, err := srv.WaitEventAck(testContext(t), first.EventID); err != nil {
		t.Fatal(err)
	}
	ds := srv.DeliveriesFor("C0DEV", ts)
	if len(ds) != 2 || ds[1].RetryAttempt != 1 || ds[1].RetryReason != "http_error" || !ds[1].Acked || ds[0].Acked {
		t.Errorf("deliveries %+v, want a failed first and an acknowledged retry (X-Slack-Retry-Num 1, http_error)", ds)
	}
	acks := srv.Acks()
	if len(acks) != 2 || acks[0].StatusCode != http.StatusInternalServerError || acks[1].StatusCode != http.StatusOK {
		t.Errorf("answers %+v, want 500 then 200", acks)
	}
	if got := len(h.Accepted()); got != 1 {
		t.Errorf("accepted %d, want 1", got)
	}
}

func TestHTTPEventsRejectsOtherMethods(t *testing.T) {
	srv := slackfake.New(t)
	r := startHTTP(t, srv, newRecorder(), signingSecret, slackfake.TamperNone)
	resp, err := http.Get(r.eventsURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET answered %d, want 405", resp.StatusCode)
	}
}
