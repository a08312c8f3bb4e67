package config

import (
	"errors"
	"strings"
)

// Error is one problem with the configuration: the dotted key it concerns
// (e.g. "workspace.repos[1].url") and why it is wrong. Key is empty for problems
// of the file as a whole (unreadable, not YAML). Reasons never quote secret
// values.
type Error struct {
	Key    string
	Reason string
}

func (e *Error) Error() string {
	if e.Key == "" {
		return e.Reason
	}
	return e.Key + ": " + e.Reason
}

// Errors is every problem found, in file order for parse problems and in key
// order for validation problems. Its message has one problem per line, which is
// what the bot prints before it exits with status 2.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.As find the individual *Error values.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// AsErrors returns the problems carried by err: the Errors of Parse, Load or
// Validate, a lone *Error, or err itself as one keyless problem.
func AsErrors(err error) Errors {
	if err == nil {
		return nil
	}
	var es Errors
	if errors.As(err, &es) {
		return es
	}
	var e *Error
	if errors.As(err, &e) {
		return Errors{e}
	}
	return Errors{{Reason: err.Error()}}
}

// collector accumulates problems and keeps only the first one per key, so an
// unset variable is not reported a second time as "required".
type collector struct {
	errs Errors
	seen map[string]bool
}

func (c *collector) add(key, reason string) {
	if c.seen == nil {
		c.seen = make(map[string]bool)
	}
	if key != "" && c.seen[key] {
		return
	}
	c.seen[key] = true
	c.errs = append(c.errs, &Error{Key: key, Reason: reason})
}

func (c *collector) err() error {
	if len(c.errs) == 0 {
		return nil
	}
	return c.errs
}
