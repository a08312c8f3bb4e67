package slackfake

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// HTTPEvents switches event delivery to the HTTP Events API (a bot in `mode: http`).
type HTTPEvents struct {
	// URL is the bot's Request URL; SigningSecret the app's signing secret.
	URL           string
	SigningSecret string
	// InteractiveURL is the app's interactivity Request URL (clicks); URL
	// when empty.
	InteractiveURL string
	// Tamper spoils every request's signing, to test verification.
	Tamper Tamper
	// Timeout is how long the fake waits for a response before counting the request
	// failed (reason http_timeout). Zero means Slack's 3 s.
	Timeout time.Duration
}

// Tamper is a way to spoil a signed request.
type Tamper int

const (
	// TamperNone signs correctly.
	TamperNone Tamper = iota
	// TamperSignature signs with a different secret.
	TamperSignature
	// TamperBody changes the body after signing it.
	TamperBody
	// TamperStaleTimestamp signs correctly, with a timestamp ten minutes old.
	TamperStaleTimestamp
	// TamperNoSignature leaves out X-Slack-Signature.
	TamperNoSignature
)

// slackDeadline is how long Slack waits for an HTTP event response.
const slackDeadline = 3 * time.Second

// UseHTTPEvents delivers every later event by POSTing its event_callback, signed, to
// cfg.URL instead of over Socket Mode: in order, one at a time, each waiting at most
// cfg.Timeout. The response is the ack: every response is recorded in Acks, and a
// 2xx one marks the delivery acknowledged. With WithRedelivery, failures are retried
// with X-Slack-Retry-Num and X-Slack-Retry-Reason (http_timeout, http_error,
// connection_failed).
func (s *Server) UseHTTPEvents(cfg HTTPEvents) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = slackDeadline
	}
	s.mu.Lock()
	s.http = &cfg
	closed := s.closed
	if !closed {
		s.httpStart.Do(func() {
			s.wg.Add(1)
			go s.httpLoop()
		})
	}
	s.mu.Unlock()
}

// UseSocketMode delivers later events over Socket Mode again.
func (s *Server) UseSocketMode() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.http = nil
}

func (s *Server) httpLoop() {
	defer s.wg.Done()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	for {
		select {
		case <-s.httpWake:
		case <-s.ctx.Done():
			return
		}
		for {
			s.mu.Lock()
			if len(s.httpQueue) == 0 || s.http == nil || s.closed {
				s.mu.Unlock()
				break
			}
			d := s.httpQueue[0]
			s.httpQueue = s.httpQueue[1:]
			cfg := *s.http
			d.Sent = time.Now()
			s.mu.Unlock()
			s.post(client, cfg, d)
		}
	}
}

// post makes one HTTP delivery and records its outcome.
func (s *Server) post(client *http.Client, cfg HTTPEvents, d *delivery) {
	ctx, cancel := context.WithTimeout(s.ctx, cfg.Timeout)
	defer cancel()
	p := SignedPost{
		URL: cfg.URL, Secret: cfg.SigningSecret, Body: d.rec.payload,
		RetryNum: d.RetryAttempt, RetryReason: d.RetryReason, Tamper: cfg.Tamper,
	}
	if d.rec.interactive {
		// Interactivity requests are form-encoded (payload=…), signed the
		// same way, without retry headers.
		p.URL, p.Body, p.Form, p.RetryNum = cfg.InteractiveURL, interactiveForm(d.rec.payload), true, 0
		if p.URL == "" {
			p.URL = cfg.URL
		}
	}
	status, body, err := p.do(ctx, client)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		s.armRedeliveryLocked(d, "http_timeout")
	case err != nil:
		s.armRedeliveryLocked(d, "connection_failed")
	default:
		ok := status >= 200 && status < 300
		s.recordAckLocked(Ack{DeliveryID: d.ID, Body: body, StatusCode: status, Received: time.Now()}, ok)
		if !ok {
			s.armRedeliveryLocked(d, "http_error")
		}
	}
}

// URLVerification is the outcome of a url_verification request.
type URLVerification struct {
	Challenge  string // what the fake sent
	StatusCode int
	Body       []byte // what the bot answered
}

// VerifyURL sends the url_verification request Slack sends when a Request URL is
// configured, signed (or tampered) as UseHTTPEvents said. The bot should answer 200
// with the challenge.
func (s *Server) VerifyURL(ctx context.Context) (URLVerification, error) {
	s.mu.Lock()
	if s.http == nil {
		s.mu.Unlock()
		return URLVerification{}, errors.New("slackfake: VerifyURL before UseHTTPEvents")
	}
	cfg := *s.http
	s.mu.Unlock()
	v := URLVerification{Challenge: randomID()}
	body, err := json.Marshal(map[string]string{"token": verificationToken, "challenge": v.Challenge, "type": "url_verification"})
	if err != nil {
		return v, err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	p := SignedPost{URL: cfg.URL, Secret: cfg.SigningSecret, Body: body, Tamper: cfg.Tamper}
	v.StatusCode, v.Body, err = p.Do(ctx)
	return v, err
}

// SignedPost is a request as Slack sends it to an Events API Request URL.
type SignedPost struct {
	URL    string
	Secret string
	Body   []byte
	// Timestamp is X-Slack-Request-Timestamp; zero means now.
	Timestamp time.Time
	// RetryNum and RetryReason set X-Slack-Retry-Num/-Reason when RetryNum > 0.
	RetryNum    int
	RetryReason string
	Tamper      Tamper
	// Form sends the body as application/x-www-form-urlencoded
	// (interactivity) instead of JSON.
	Form bool
}

// Do sends the request and returns the response's status and body.
func (p SignedPost) Do(ctx context.Context) (int, []byte, error) {
	return p.do(ctx, http.DefaultClient)
}

func (p SignedPost) do(ctx context.Context, client *http.Client) (int, []byte, error) {
	ts := p.Timestamp
	if ts.IsZero() {
		ts = time.Now()
	}
	if p.Tamper == TamperStaleTimestamp {
		ts = ts.Add(-10 * time.Minute)
	}
	secret, body := p.Secret, p.Body
	if p.Tamper == TamperSignature {
		secret += "-wrong"
	}
	sig := Sign(secret, ts.Unix(), body)
	if p.Tamper == TamperBody {
		body = append(bytes.Clone(body), ' ')
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if p.Form {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	} else {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", "Slackbot 1.0 (+https://api.slack.com/robots)")
	req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(ts.Unix(), 10))
	if p.Tamper != TamperNoSignature {
		req.Header.Set("X-Slack-Signature", sig)
	}
	if p.RetryNum > 0 {
		req.Header.Set("X-Slack-Retry-Num", strconv.Itoa(p.RetryNum))
		req.Header.Set("X-Slack-Retry-Reason", p.RetryReason)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("slackfake: posting event: %w", err)
	}
	defer resp.Body.Close()
	rbody, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, rbody, err
}

// Sign returns Slack's v0 request signature: "v0=" and the hex HMAC-SHA256, keyed
// with the signing secret, of "v0:<timestamp>:<body>".
func Sign(secret string, timestamp int64, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	fmt.Fprintf(mac, "v0:%d:", timestamp)
	mac.Write(body)
	return "v0=" + hex.EncodeToString(mac.Sum(nil))
}
