package slack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	slackapi "github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
)

// maxEventBody caps an Events API request body; Slack's are a few kilobytes.
const maxEventBody = 1 << 20

// shutdownTimeout bounds the wait for in-flight requests when Run ends; they
// are cancelled with Run's context, so they end quickly.
const shutdownTimeout = 5 * time.Second

// runHTTP serves the Events API until ctx ends. Any path answers, so the Request
// URL configured in Slack may be any path of this address (the README uses
// /slack/events).
func (a *Adapter) runHTTP(ctx context.Context, d *dispatcher) error {
	ln := a.listen
	if ln == nil {
		var err error
		if ln, err = (&net.ListenConfig{}).Listen(ctx, "tcp", a.cfg.Listen); err != nil {
			return fmt.Errorf("slack: listening on slack.listen %q: %w", a.cfg.Listen, err)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv := &http.Server{
		Handler:           a.eventsHandler(ctx, d),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	a.log.Info("slack: serving the Events API", "addr", ln.Addr().String())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	a.connected.Store(true) // listening: Slack's requests are answered
	select {
	case err := <-served:
		return fmt.Errorf("slack: serving the Events API: %w", err)
	case <-ctx.Done():
	}
	sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer scancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	<-served
	return nil
}

// eventsHandler answers Slack's Events API requests. The response is the
// acknowledgement: 200 only once Receive has made the message durable, 500 when
// it failed (Slack retries), 401 when the signature is wrong (nothing runs).
func (a *Adapter) eventsHandler(ctx context.Context, d *dispatcher) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxEventBody))
		if err != nil {
			http.Error(w, "request body too large or unreadable", http.StatusRequestEntityTooLarge)
			return
		}
		if err := verify(r.Header, body, a.cfg.SigningSecret); err != nil {
			a.log.Warn("slack: rejected an Events API request", "remote", r.RemoteAddr, "err", err)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		if isForm(r.Header) {
			a.serveInteraction(ctx, d, w, body)
			return
		}
		ev, err := slackevents.ParseEvent(body, slackevents.OptionNoVerifyToken())
		if err != nil {
			http.Error(w, "unreadable event", http.StatusBadRequest)
			return
		}
		switch ev.Type {
		case slackevents.URLVerification:
			var v slackevents.EventsAPIURLVerificationEvent
			if err := json.Unmarshal(body, &v); err != nil {
				http.Error(w, "unreadable challenge", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(slackevents.ChallengeResponse{Challenge: v.Challenge})
			return
		case slackevents.CallbackEvent:
		default: // app_rate_limited and the like: nothing to do
			w.WriteHeader(http.StatusOK)
			return
		}
		if n := r.Header.Get("X-Slack-Retry-Num"); n != "" {
			attempt, _ := strconv.Atoi(n)
			a.log.Debug("slack: redelivered event", "attempt", attempt, "reason", r.Header.Get("X-Slack-Retry-Reason"))
		}
		if user, ok := homeOpened(ev); ok {
			w.WriteHeader(http.StatusOK)
			a.submitHome(ctx, d, user)
			return
		}
		m, eventID, ok := fromEvent(ev)
		if !ok || !m.isInput(d.id) {
			w.WriteHeader(http.StatusOK)
			return
		}
		in := m.inbound(d.id, eventID)
		done := make(chan error, 1)
		d.submit(in.Thread, func() { done <- d.deliverMessage(ctx, in) })
		select {
		case err = <-done:
		case <-r.Context().Done():
			return // Slack gave up waiting; it retries, and Receive de-duplicates
		}
		if err != nil {
			http.Error(w, "not stored; retry", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}

// isForm says the request is form-encoded: an interactivity payload (the
// Events API sends JSON).
func isForm(h http.Header) bool {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt == "application/x-www-form-urlencoded"
}

// serveInteraction answers an interactivity request (its signature checked):
// 200 at once, then a click on a button is delivered as its command.
func (a *Adapter) serveInteraction(ctx context.Context, d *dispatcher, w http.ResponseWriter, body []byte) {
	form, err := url.ParseQuery(string(body))
	if err != nil || form.Get("payload") == "" {
		http.Error(w, "no payload", http.StatusBadRequest)
		return
	}
	var cb slackapi.InteractionCallback
	if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil {
		http.Error(w, "unreadable payload", http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusOK)
	a.onClick(ctx, d, cb)
}

// verify checks Slack's v0 request signature (and the timestamp's freshness).
func verify(h http.Header, body []byte, secret string) error {
	sv, err := slackapi.NewSecretsVerifier(h, secret)
	if err != nil {
		return err
	}
	if _, err := sv.Write(body); err != nil {
		return err
	}
	if err := sv.Ensure(); err != nil {
		return errors.New("signature mismatch")
	}
	return nil
}
