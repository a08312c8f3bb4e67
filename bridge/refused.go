package bridge

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/threadsmith/threadsmith/internal/safefile"
)

// maxRefusalsShown is how many refused files the thread's note names.
const maxRefusalsShown = 3

// refusals lists the worktree files refused among errs (joined errors are
// looked into): the files the agent could have written that the bot did not
// read. Refusals of the operator's own folders (absolute paths) are not the
// thread's business and are left to the log.
func refusals(errs ...error) []*safefile.Error {
	var out []*safefile.Error
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range j.Unwrap() {
				walk(e)
			}
			return
		}
		if e, ok := safefile.Refused(err); ok && !filepath.IsAbs(e.Path) {
			out = append(out, e)
		}
	}
	for _, err := range errs {
		walk(err)
	}
	return out
}

// refusalNote is the one line the thread gets when a session starts without
// some of the worktree's files: which, and why (the file's name as code, so
// that a name the agent chose cannot format or mention anything).
func refusalNote(refused []*safefile.Error) string {
	if len(refused) == 0 {
		return ""
	}
	var parts []string
	for i, e := range refused {
		if i == maxRefusalsShown {
			parts = append(parts, fmt.Sprintf("and %d more (the bot's log names them)", len(refused)-i))
			break
		}
		parts = append(parts, "`"+codeSafe(e.Path)+"` "+strings.TrimPrefix(e.Error(), e.Path+" "))
	}
	return "⚠️ " + strings.Join(parts, "; ")
}

// codeSafe makes a file name safe inside inline code: no backtick, no line
// break or other control character, at most 120 characters.
func codeSafe(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '`' || r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, strings.ToValidUTF8(s, "?"))
	if r := []rune(s); len(r) > 120 {
		s = string(r[:120]) + "…"
	}
	return s
}
