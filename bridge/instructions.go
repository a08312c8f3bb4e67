package bridge

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"
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
// bot's data folder), through an os.Root so that a symlink cannot lead out.
// It returns the file's name ("" when there is none) and the prompt text.
func repoInstructions(root string) (name, text string) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return "", ""
	}
	defer r.Close()
	for _, n := range instructionFiles {
		f, err := r.Open(n)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", ""
		}
		fi, err := f.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			f.Close()
			continue
		}
		b, err := io.ReadAll(io.LimitReader(f, maxInstructionBytes+1))
		f.Close()
		if err != nil {
			return "", ""
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
		return n, text
	}
	return "", ""
}
