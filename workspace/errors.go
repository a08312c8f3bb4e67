package workspace

import (
	"errors"
	"regexp"
	"strings"
)

// Code classifies a workspace error so callers can react without parsing text.
type Code string

// Error codes.
const (
	CodeUnknownRepo     Code = "unknown_repo"      // no repository of that name is configured
	CodeNoDefaultBranch Code = "no_default_branch" // the remote lacks the configured default branch
	CodeAuth            Code = "auth"              // the remote refused the credentials
	CodeUnreachable     Code = "unreachable"       // network failure, timeout, repository not found
	CodePushRejected    Code = "push_rejected"     // the remote branch has commits we must not drop
	CodeForbidden       Code = "forbidden"         // a push outside branch_prefix or to the default branch
	CodeWrongBranch     Code = "wrong_branch"      // the worktree was switched off the thread's branch
	CodeInvalid         Code = "invalid"           // bad input from the caller (empty thread key, …)
	CodeClosed          Code = "closed"            // the manager or workspace is closed
	CodeInternal        Code = "internal"          // anything unexpected; see the log
)

// Error is a workspace failure. Message is written for the people in the
// thread: it names the repository and what to do, and never holds a token, a
// path on the bot's disk or git's raw output. Err holds the detail for logs,
// with secrets already removed.
type Error struct {
	Code    Code
	Message string
	Err     error
}

// Sentinels for errors.Is: an *Error matches the sentinel of its Code.
var (
	ErrUnknownRepo     = &Error{Code: CodeUnknownRepo}
	ErrNoDefaultBranch = &Error{Code: CodeNoDefaultBranch}
	ErrAuth            = &Error{Code: CodeAuth}
	ErrUnreachable     = &Error{Code: CodeUnreachable}
	ErrPushRejected    = &Error{Code: CodePushRejected}
	ErrForbidden       = &Error{Code: CodeForbidden}
	ErrWrongBranch     = &Error{Code: CodeWrongBranch}
	ErrInvalid         = &Error{Code: CodeInvalid}
	ErrClosed          = &Error{Code: CodeClosed}
)

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = "workspace: " + string(e.Code)
	}
	if e.Err != nil {
		return msg + ": " + e.Err.Error()
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches sentinels (an *Error without Message or Err) by Code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Err == nil && t.Code == e.Code
}

// ErrorCode returns the Code of err, CodeInternal for foreign errors and ""
// for nil.
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ErrorMessage returns what may be said in a chat thread about err: the
// Message of an *Error, or a generic sentence for anything else (whose detail
// belongs in the log).
func ErrorMessage(err error) string {
	// The first message in the chain: an error without one may wrap one
	// that has it.
	for err != nil {
		var e *Error
		if !errors.As(err, &e) {
			break
		}
		if e.Message != "" {
			return e.Message
		}
		err = e.Err
	}
	return "Something went wrong with the workspace; the details are in the bot's log."
}

func newError(code Code, msg string, err error) *Error {
	return &Error{Code: code, Message: msg, Err: err}
}

// userinfoRE matches credentials embedded in URLs, in case git or a library
// echoes a URL someone configured with them.
var userinfoRE = regexp.MustCompile(`(://)[^/@\s]+@`)

// redactor removes secrets from text that may reach logs or errors.
type redactor []string

func (r redactor) String(s string) string {
	for _, secret := range r {
		if len(secret) >= 4 {
			s = strings.ReplaceAll(s, secret, "***")
		}
	}
	return userinfoRE.ReplaceAllString(s, "${1}***@")
}

// Error wraps err so that its text is redacted; errors.Is/As still reach the
// original.
func (r redactor) Error(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	clean := r.String(msg)
	if clean == msg {
		return err
	}
	return &redactedError{msg: clean, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
