package workspace

import (
	"net/url"
	"strings"
)

// Forges that have a compare page.
const (
	forgeGitHub    = "github"
	forgeGitLab    = "gitlab"
	forgeBitbucket = "bitbucket"
	forgeGitea     = "gitea"
	forgeNone      = "none"
)

// CompareURL returns the web page comparing head against base for a remote
// URL (https, http, ssh:// or scp-like git@host:owner/repo.git), or "" when
// the forge is unknown or the remote is local. forge overrides the guess from
// the host name ("github", "gitlab", "bitbucket", "gitea", "none"; "" to
// guess).
//
// Formats: GitHub and Gitea /compare/<base>...<head>; GitLab
// /-/compare/<base>...<head>; Bitbucket Cloud
// /branches/compare/<head>%0D<base> (source first, then destination).
func CompareURL(remoteURL, forge, base, head string) string {
	web, host := webBase(remoteURL)
	if web == "" {
		return ""
	}
	if forge == "" {
		forge = guessForge(host)
	}
	b, h := escapeRef(base), escapeRef(head)
	switch forge {
	case forgeGitHub, forgeGitea:
		return web + "/compare/" + b + "..." + h
	case forgeGitLab:
		return web + "/-/compare/" + b + "..." + h
	case forgeBitbucket:
		return web + "/branches/compare/" + h + "%0D" + b
	default:
		return ""
	}
}

// webBase turns a remote URL into the repository's web address
// (scheme://host/owner/repo, without credentials, ".git" or an ssh port) and
// returns the host name.
func webBase(remote string) (web, host string) {
	var scheme, path string
	switch {
	case strings.HasPrefix(remote, "https://"), strings.HasPrefix(remote, "http://"):
		u, err := url.Parse(remote)
		if err != nil || u.Host == "" {
			return "", ""
		}
		scheme, host, path = u.Scheme, u.Host, u.Path
	case strings.HasPrefix(remote, "ssh://"), strings.HasPrefix(remote, "git+ssh://"):
		u, err := url.Parse(strings.TrimPrefix(remote, "git+"))
		if err != nil || u.Host == "" {
			return "", ""
		}
		// The web UI is not served on the ssh port.
		scheme, host, path = "https", u.Hostname(), u.Path
	case scpLikeRE.MatchString(remote) && !strings.Contains(remote, "://"):
		rest := remote
		if i := strings.IndexByte(rest, '@'); i >= 0 {
			rest = rest[i+1:]
		}
		h, p, _ := strings.Cut(rest, ":")
		scheme, host, path = "https", h, "/"+p
	default:
		return "", ""
	}
	path = strings.TrimSuffix(strings.TrimSuffix(path, "/"), ".git")
	path = strings.Trim(path, "/")
	if path == "" || host == "" {
		return "", ""
	}
	hostname := host
	if i := strings.LastIndexByte(hostname, ':'); i >= 0 && !strings.HasSuffix(hostname, "]") {
		hostname = hostname[:i]
	}
	return scheme + "://" + host + "/" + path, strings.ToLower(hostname)
}

func guessForge(host string) string {
	switch host {
	case "github.com":
		return forgeGitHub
	case "gitlab.com":
		return forgeGitLab
	case "bitbucket.org":
		return forgeBitbucket
	case "gitea.com", "codeberg.org":
		return forgeGitea
	}
	for _, hint := range []string{forgeGitHub, forgeGitLab, forgeBitbucket, forgeGitea} {
		if strings.Contains(host, hint) {
			return hint
		}
	}
	if strings.Contains(host, "forgejo") {
		return forgeGitea
	}
	return ""
}

// escapeRef escapes each segment of a branch name for a URL path, keeping the
// slashes forges expect to see.
func escapeRef(ref string) string {
	segs := strings.Split(ref, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}
