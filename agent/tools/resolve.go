package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Limits on the paths a model may give.
const (
	maxPathBytes = 4096 // PATH_MAX
	maxNameBytes = 255  // NAME_MAX
	maxSymlinks  = 40   // as Linux
)

// target is a path the resolver accepted: an area and a canonical path inside
// it. rel is slash-separated, "." for the area's root, and holds no ".", ".."
// or symbolic link as far as the path exists. Operations still go through the
// area's os.Root, so a symlink swapped in after resolution cannot lead out either.
type target struct {
	area *area
	rel  string
}

// abs is the target's absolute path.
func (t target) abs() string {
	if t.rel == "." {
		return t.area.abs
	}
	return t.area.abs + "/" + t.rel
}

// display is how results name the target: relative to the workspace root, or
// absolute in the scratch area (so a model can tell the two apart).
func (t target) display() string {
	if t.area.isRepo {
		return t.rel
	}
	return t.abs()
}

// pathError is a path the model may not use, or that does not work; its
// message is written for the model.
type pathError struct{ msg string }

func (e *pathError) Error() string { return e.msg }

func refusal(format string, args ...any) error {
	return &pathError{fmt.Sprintf(format, args...)}
}

func refuse(format string, args ...any) (target, error) {
	return target{}, refusal(format, args...)
}

// quoted shortens a model-given path for a message.
func quoted(p string) string {
	if len(p) > 120 {
		p = p[:120] + "…"
	}
	return fmt.Sprintf("%q", p)
}

// resolve maps a path written by the model to a target. Relative paths are
// relative to the workspace root. Absolute paths are accepted inside the root or
// the scratch folder. Everything else is refused with a reason: paths outside,
// ".." escapes, symbolic links (last component or any directory on the way)
// leading outside, symlink loops, NUL bytes, overlong paths and names, "~",
// unicode look-alikes of ".", ".." and "/", and anything inside .git.
//
// .git is refused for reads as well as writes: the file tools have no business
// there (bash has git), a hook written there would run in the bot's own git
// calls, and one simple rule is easier to get right than two.
func (w *Workspace) resolve(input string) (target, error) {
	if strings.IndexByte(input, 0) >= 0 {
		return refuse("path %s contains a NUL byte", quoted(input))
	}
	if len(input) > maxPathBytes {
		return refuse("path is too long (%d bytes; at most %d)", len(input), maxPathBytes)
	}
	p := strings.TrimPrefix(input, "@") // some models copy pi's @file mention syntax
	if p == "" {
		p = "."
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		return refuse("path %s is in a home folder, outside the workspace; use a path relative to the workspace root", quoted(input))
	}
	a := &w.repo
	if filepath.IsAbs(p) {
		var ok bool
		if a, p, ok = w.areaOf(filepath.Clean(p)); !ok {
			return refuse("path %s is outside the workspace (%s); use a path relative to the workspace root", quoted(input), w.repo.abs)
		}
	}
	rel := path.Clean(filepath.ToSlash(p))
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return refuse("path %s leaves the workspace", quoted(input))
	}
	parts := splitRel(rel)
	for _, name := range parts {
		if len(name) > maxNameBytes {
			return refuse("path %s has a name longer than %d bytes", quoted(input), maxNameBytes)
		}
		if like, ok := lookalike(name); ok {
			return refuse("path %s has a name that looks like %q but is not; write the path plainly", quoted(input), like)
		}
	}
	canon, err := a.canonicalize(input, parts)
	if err != nil {
		return target{}, err
	}
	if a.isRepo {
		for _, name := range canon {
			if strings.EqualFold(name, ".git") {
				return refuse("path %s is inside .git, which the file tools do not touch; use git commands in bash", quoted(input))
			}
		}
	}
	if len(canon) == 0 {
		return target{area: a, rel: "."}, nil
	}
	return target{area: a, rel: strings.Join(canon, "/")}, nil
}

// areaOf finds the area an absolute, clean path lies in and its path there.
func (w *Workspace) areaOf(p string) (*area, string, bool) {
	for _, a := range []*area{&w.repo, &w.scratch} {
		for _, base := range append([]string{a.abs}, a.aliases...) {
			if within(base, p) {
				rel, err := filepath.Rel(base, p)
				if err == nil {
					return a, rel, true
				}
			}
		}
	}
	return nil, "", false
}

func splitRel(rel string) []string {
	if rel == "." || rel == "" {
		return nil
	}
	return strings.Split(rel, "/")
}

// canonicalize follows the symbolic links of parts inside the area, the way the
// kernel would, and returns the resulting path's names. Components past the
// first missing one are taken literally (a write may create them).
func (a *area) canonicalize(input string, parts []string) ([]string, error) {
	pending := append([]string(nil), parts...)
	var out []string
	links := 0
	lastLink := ""
	missing := false
	for len(pending) > 0 {
		name := pending[0]
		pending = pending[1:]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(out) == 0 {
				if lastLink != "" {
					return nil, refusal("path %s goes through the symbolic link %s, which points outside the workspace", quoted(input), lastLink)
				}
				return nil, refusal("path %s leaves the workspace", quoted(input))
			}
			out = out[:len(out)-1]
			continue
		}
		if missing {
			out = append(out, name)
			continue
		}
		cand := strings.Join(append(out[:len(out):len(out)], name), "/")
		fi, err := a.fs.Lstat(cand)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			missing = true
			out = append(out, name)
			continue
		case err != nil:
			return nil, refusal("path %s: %s", quoted(input), describeFSError(err))
		case fi.Mode()&fs.ModeSymlink == 0:
			out = append(out, name)
			continue
		}
		links++
		if links > maxSymlinks {
			return nil, refusal("path %s has too many levels of symbolic links (a loop?)", quoted(input))
		}
		dest, err := a.fs.Readlink(cand)
		if err != nil {
			return nil, refusal("path %s: %s", quoted(input), describeFSError(err))
		}
		lastLink = cand
		if filepath.IsAbs(dest) {
			dest = filepath.Clean(dest)
			base := ""
			for _, b := range append([]string{a.abs}, a.aliases...) {
				if within(b, dest) {
					base = b
					break
				}
			}
			if base == "" {
				return nil, refusal("path %s goes through the symbolic link %s, which points outside the workspace (to %s)", quoted(input), cand, dest)
			}
			rel, _ := filepath.Rel(base, dest)
			out = nil
			pending = append(splitRel(filepath.ToSlash(rel)), pending...)
			continue
		}
		pending = append(strings.Split(filepath.ToSlash(dest), "/"), pending...)
	}
	return out, nil
}

// lookalike reports whether a name is not ".", ".." or ".git" but reads as one,
// or holds a character that reads as a slash: such names are mistakes at best
// and attempts to slip past a check at worst.
func lookalike(name string) (string, bool) {
	ascii := true
	for i := 0; i < len(name); i++ {
		if name[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return "", false
	}
	n := norm.NFKC.String(strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) { // zero-width and other invisible formatting
			return -1
		}
		switch r {
		case '\u2215', '\u2044', '\u29f8', '\u2571', '\u3033': // slashes NFKC leaves alone
			return '/'
		case '\u29f5', '\u29f9', '\u2572', '\ufe68':
			return '\\'
		}
		return r
	}, name))
	switch {
	case strings.ContainsAny(n, "/\\"):
		return "/", true
	case n == "." || n == "..":
		return n, true
	case strings.EqualFold(n, ".git"):
		return ".git", true
	}
	return "", false
}

// describeFSError turns a file-system error into words for the model, without
// the absolute paths a *PathError carries.
func describeFSError(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file or directory"
	case errors.Is(err, fs.ErrPermission):
		return "permission denied"
	case errors.Is(err, syscall.ENOTDIR):
		return "a component of the path is not a directory"
	case errors.Is(err, syscall.EISDIR):
		return "is a directory"
	case errors.Is(err, syscall.ELOOP):
		return "too many levels of symbolic links"
	case errors.Is(err, syscall.ENAMETOOLONG):
		return "name too long"
	case errors.Is(err, syscall.ENOSPC):
		return "no space left on device"
	case strings.Contains(err.Error(), "escapes from parent"):
		return "the path leads outside the workspace"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
