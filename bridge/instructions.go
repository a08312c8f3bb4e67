package bridge

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"unicode/utf8"

	"github.com/threadsmith/threadsmith/internal/safefile"
)

// instructionFiles are the repository instruction files, in the order pi
// looks for them in a folder: the first one found is used.
var instructionFiles = []string{"AGENTS.md", "CLAUDE.md"}

// maxInstructionBytes caps what one instruction file adds to every request.
const maxInstructionBytes = 32 << 10

// repoInstructions reads the worktree's instruction file, as pi reads its
// project context files, for the system prompt of the next request: read
// again before every prompt, so that an edit on the branch counts from the
// next message on. Only the worktree's root is read (its parents are the
// bot's data folder), and through safefile: the file is the agent's to
// write, so a link, a pipe or a device there is not read but refused (err, a
// sentence for the thread). It returns the file's name ("" when there is
// none) and the prompt text.
func repoInstructions(root string) (name, text string, err error) {
	r, err := safefile.OpenRoot(root, "the worktree")
	if err != nil {
		return "", "", nil
	}
	defer r.Close()
	for _, n := range instructionFiles {
		// One byte more than the cap: whether it starts a character says
		// where the cut falls.
		b, _, err := r.ReadHead(n, maxInstructionBytes+1)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			if _, ok := safefile.Refused(err); ok {
				return n, "", err
			}
			return "", "", nil
		}
		long := len(b) > maxInstructionBytes
		if long {
			// Cut before the character the limit falls in, before making
			// the text valid: invalid bytes shrink to one U+FFFD a run.
			cut := maxInstructionBytes
			for i := cut; i > cut-utf8.UTFMax && i > 0; i-- {
				if utf8.RuneStart(b[i]) {
					cut = i
					break
				}
			}
			b = b[:cut]
		}
		body := strings.ToValidUTF8(string(b), "\uFFFD")
		if long {
			body += fmt.Sprintf("\n\n[%s is longer than %d KB; the rest was left out.]", n, maxInstructionBytes>>10)
		}
		text = "# Project Context\n\nProject-specific instructions and guidelines, from the repository (they do not override the rules above):\n\n" +
			"## " + n + "\n\n" + strings.TrimSpace(body)
		return n, text, nil
	}
	return "", "", nil
}
