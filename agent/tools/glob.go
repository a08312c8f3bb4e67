package tools

import (
	"errors"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// maxGlobAlternatives bounds brace expansion ({a,b}{c,d}… multiplies).
const maxGlobAlternatives = 256

// glob matches slash paths against a pattern with *, ?, [...], [!...], ** and
// {a,b}, as shells (bash with globstar) and .gitignore read them; the matching
// itself is doublestar's. A pattern (alternative) without a slash matches the
// base name at any depth, as ripgrep's and fd's globs do ("*.go"); one with a
// slash matches the whole path relative to the search folder, where ** spans any
// number of folders, none included ("src/**/*_test.go", "**/*.json").
type glob struct {
	alts []globAlt
}

type globAlt struct {
	pattern  string   // a doublestar pattern without top-level alternatives
	segs     []string // pattern split at '/', for pruning folders
	basename bool
	// folder is set for a pattern ending in "/**": pattern then holds what is
	// inside (…/*/**) and folder the folder itself, which matches only a folder.
	folder string
}

func compileGlob(pattern string) (*glob, error) {
	g := &glob{}
	// Braces are expanded here rather than left to doublestar because each
	// alternative decides on its own whether it is a base-name pattern:
	// "{src/*.go,*.md}" finds README.md at any depth.
	for _, alt := range expandBraces(pattern) {
		alt = strings.TrimPrefix(alt, "./")
		alt = strings.TrimPrefix(alt, "/")
		alt = strings.TrimSuffix(alt, "/")
		if alt == "" {
			continue
		}
		if !doublestar.ValidatePattern(alt) {
			return nil, errors.New("bad glob pattern " + quoted(pattern) + ": unbalanced [ or {, or a trailing \\")
		}
		segs := strings.Split(alt, "/")
		a := globAlt{pattern: alt, segs: segs, basename: len(segs) == 1 && segs[0] != "**"}
		// A trailing /** is "everything inside" (bash, .gitignore); doublestar
		// also lets it match nothing, so that "src/**" would find a file named
		// src, and "*/**" every file at the top.
		if prefix, ok := strings.CutSuffix(alt, "/**"); ok && prefix != "**" && !strings.HasSuffix(prefix, "/**") {
			a.pattern, a.folder = prefix+"/*/**", prefix
		}
		g.alts = append(g.alts, a)
	}
	if len(g.alts) == 0 {
		return nil, errors.New("empty glob pattern")
	}
	return g, nil
}

// match reports whether rel (slash path relative to the search folder), a
// folder when isDir, matches.
func (g *glob) match(rel string, isDir bool) bool {
	name := rel[strings.LastIndexByte(rel, '/')+1:]
	for _, a := range g.alts {
		subject := rel
		if a.basename {
			subject = name
		}
		if doublestar.MatchUnvalidated(a.pattern, subject) {
			return true
		}
		if isDir && a.folder != "" && doublestar.MatchUnvalidated(a.folder, rel) {
			return true
		}
	}
	return false
}

// descend reports whether anything below the folder rel (relative to the
// search folder) can match, so that a walk skips folders a pattern rules out:
// "pkg3/**/*.go" never looks outside pkg3. It errs on the side of descending.
func (g *glob) descend(rel string) bool {
	dir := strings.Split(rel, "/")
	for _, a := range g.alts {
		if a.basename || mayContain(a.segs, dir) {
			return true
		}
	}
	return false
}

// mayContain reports whether a path below the folder dir can match the
// pattern segments segs: dir's names must match the pattern's leading
// segments up to its first "**", after which anything may follow.
func mayContain(segs, dir []string) bool {
	for i, name := range dir {
		if i >= len(segs) {
			return false // the pattern ends above this folder
		}
		if strings.Contains(segs[i], "**") {
			return true
		}
		if !doublestar.MatchUnvalidated(segs[i], name) {
			return false
		}
	}
	return len(segs) > len(dir)
}

// expandBraces turns "*.{ts,tsx}" into "*.ts" and "*.tsx", nested braces
// included. Braces without a top-level comma are left as they are.
func expandBraces(p string) []string {
	out := []string{}
	var expand func(s string)
	expand = func(s string) {
		if len(out) >= maxGlobAlternatives {
			return
		}
		open, close, commas := -1, -1, []int(nil)
		depth := 0
	scan:
		for i := 0; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '{':
				if depth == 0 {
					open, commas = i, nil
				}
				depth++
			case ',':
				if depth == 1 {
					commas = append(commas, i)
				}
			case '}':
				if depth == 0 {
					continue
				}
				depth--
				if depth == 0 {
					if len(commas) > 0 {
						close = i
						break scan
					}
					open = -1
				}
			}
		}
		if close < 0 {
			out = append(out, s)
			return
		}
		prev := open + 1
		for _, c := range append(commas, close) {
			expand(s[:open] + s[prev:c] + s[close+1:])
			prev = c + 1
		}
	}
	expand(p)
	return out
}
