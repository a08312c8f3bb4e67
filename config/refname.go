package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// refNameProblem says why name is not a valid git branch name (the rules of
// git check-ref-format --branch), or returns "".
func refNameProblem(name string) string {
	if name == "" {
		return "must not be empty"
	}
	if name == "@" {
		return `must not be "@"`
	}
	if strings.HasSuffix(name, "/") {
		return `must not end with "/"`
	}
	if strings.HasSuffix(name, ".") {
		return `must not end with "."`
	}
	if strings.HasSuffix(name, ".lock") {
		return `must not end with ".lock"`
	}
	return refPrefixProblem(name)
}

// refPrefixProblem says why prefix cannot start git branch names, or returns
// "". A prefix may end with "/" or "."; everything else follows
// check-ref-format.
func refPrefixProblem(prefix string) string {
	switch {
	case strings.HasPrefix(prefix, "-"):
		return `must not start with "-"`
	case strings.HasPrefix(prefix, "/"):
		return `must not start with "/"`
	case strings.Contains(prefix, ".."):
		return `must not contain ".."`
	case strings.Contains(prefix, "//"):
		return `must not contain "//"`
	case strings.Contains(prefix, "@{"):
		return `must not contain "@{"`
	}
	for _, r := range prefix {
		switch {
		case r < 0x20 || r == 0x7f:
			return "must not contain control characters"
		case r == ' ':
			return "must not contain spaces"
		case strings.ContainsRune(`~^:?*[\`, r):
			return fmt.Sprintf("must not contain %q", r)
		}
	}
	parts := strings.Split(prefix, "/")
	for i, part := range parts {
		last := i == len(parts)-1
		switch {
		case strings.HasPrefix(part, "."):
			return `no "/"-separated part may start with "."`
		case strings.HasSuffix(part, ".lock") && !last:
			return `no "/"-separated part may end with ".lock"`
		}
	}
	return ""
}

// sortedKeys lists a map's keys in order, for deterministic error lists.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
