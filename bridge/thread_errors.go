package bridge

import (
	"errors"

	"github.com/threadsmith/threadsmith/agent"
	"github.com/threadsmith/threadsmith/workspace"
)

// userError turns an error into text safe for a channel: known errors keep
// their message (written for people); anything else is generic, with the
// details in the log.
func userError(err error) string {
	var we *workspace.Error
	var um *agent.UnknownModelError
	switch {
	case errors.As(err, &we):
		return workspace.ErrorMessage(err)
	case errors.As(err, &um):
		return um.Error()
	case errors.Is(err, agent.ErrRunActive), errors.Is(err, agent.ErrBusy):
		return err.Error()
	case isPlain(err):
		return err.Error()
	}
	return "something went wrong on my side (details are in the bot's log)"
}

// plainError is an error whose text was written for the thread.
type plainError struct{ msg string }

func (e plainError) Error() string { return e.msg }

func isPlain(err error) bool {
	var p plainError
	return errors.As(err, &p)
}
