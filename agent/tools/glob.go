package tools

import (
	"errors"
	"path"
	"strings"
)

// maxGlobAlternatives bounds brace expansion ({a,b}{c,d}… multiplies).
const maxGlobAlternatives = 256

// glob matches slash paths against a pattern with *, ?, [...], ** and {a,b}.
// A pattern (alternative) without a slash matches the base name at any depth,
// as ripgrep's and fd's globs do ("*.go"); one with a slash matches the whole
// path relative to the search folder, where ** spans any number of folders,
// none included ("src/**/*_test.go", "**/*.json").
type glob struct {
	alts []globAlt
}

type globAlt struct {
	segs     []string
	basename bool
}

func compileGlob(pattern string) (*glob, error) {
	g := &glob{}
	for _, alt := range expandBraces(pattern) {
		alt = strings.TrimPrefix(alt, "./")
		alt = strings.TrimPrefix(alt, "/")
		alt = strings.TrimSuffix(alt, "/")
		if alt == "" {
			continue
		}
		segs := strings.Split(alt, "/")
		for _, s := range segs {
			if _, err := path.Match(s, ""); err != nil {
				return nil, errors.New("bad glob pattern " + quoted(pattern) + ": unbalanced [ or trailing \\")
			}
		}
		g.alts = append(g.alts, globAlt{segs: segs, basename: len(segs) == 1 && segs[0] != "**"})
	}
	if len(g.alts) == 0 {
		return nil, errors.New("empty glob pattern")
	}
	return g, nil
}

// match reports whether rel (slash path relative to the search folder) matches.
func (g *glob) match(rel string) bool {
	name := rel[strings.LastIndexByte(rel, '/')+1:]
	var segs []string
	for _, a := range g.alts {
		if a.basename {
			if ok, _ := path.Match(a.segs[0], name); ok {
				return true
			}
			continue
		}
		if segs == nil {
			segs = strings.Split(rel, "/")
		}
		if matchSegments(a.segs, segs) {
			return true
		}
	}
	return false
}

func matchSegments(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := range len(segs) + 1 {
				if matchSegments(pat, segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
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
