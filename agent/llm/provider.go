package llm

import (
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
)

// What the provider clients (agent/openai, agent/anthropic) share: how an
// error is finished before anyone sees it, how a transport failure is told and
// worded, how a failed reply is marked, and what a user-side message says.

// minRedactLen avoids mangling messages for toy keys such as "x" that local
// servers accept; such keys are no secret.
const minRedactLen = 6

// FinishError prepares e, built from what a server or the transport said, to
// be shown: apiKey is removed from its message and code (some servers echo the
// key they rejected, even as an error type), ContextOverflow is decided, and
// an empty message names the status instead.
func FinishError(e *Error, apiKey string) *Error {
	if len(apiKey) >= minRedactLen {
		e.Message = strings.ReplaceAll(e.Message, apiKey, "[redacted]")
		e.Code = strings.ReplaceAll(e.Code, apiKey, "[redacted]")
	}
	e.ContextOverflow = e.ContextOverflow || IsContextOverflow(e.StatusCode, e.Code, e.Message)
	if strings.TrimSpace(e.Message) == "" {
		e.Message = "(no body)"
		if t := http.StatusText(e.StatusCode); t != "" {
			e.Message = t + " (no body)"
		}
	}
	return e
}

// IsTransportError reports whether err is a failure to reach the server or of
// the connection (as opposed to a refusal by the client library itself).
func IsTransportError(err error) bool {
	var urlErr *url.Error
	var opErr *net.OpError
	var dnsErr *net.DNSError
	return errors.As(err, &urlErr) || errors.As(err, &opErr) || errors.As(err, &dnsErr) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed)
}

// TransportMessage drops the url.Error wrapper, whose text repeats the method
// and the full URL (never useful in a thread), and keeps what went wrong.
func TransportMessage(err error) string {
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		return urlErr.Err.Error()
	}
	return err.Error()
}

// Failed marks m, a reply cut short by err, and returns both: an *Error makes
// it a StopReasonError carrying that error, anything else (the caller's
// context ending) StopReasonAborted.
func Failed(m Message, err error) (Message, error) {
	m.ErrorMessage = err.Error()
	var e *Error
	if errors.As(err, &e) {
		m.StopReason, m.ErrorInfo = StopReasonError, e
	} else {
		m.StopReason = StopReasonAborted
	}
	return m, err
}

// UserContent is what a user-side message says to a model: its content, or
// for a compaction summary or a bash execution that reached a provider
// unconverted, their text.
func UserContent(m Message) []Content {
	switch {
	case m.Role == RoleCompactionSummary && m.Summary != "":
		return []Content{Text(m.Summary)}
	case m.Role == RoleBashExecution && m.Bash != nil:
		return []Content{Text("$ " + m.Bash.Command + "\n" + m.Bash.Output)}
	}
	return m.Content
}
