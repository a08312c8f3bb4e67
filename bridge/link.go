package bridge

// Session pages (package web) show a thread's whole record; the thread links
// them from each run's footer, !status and !link when Config.PageLink is set.

// pageLink returns a fresh link to the thread's session page, "" when pages
// are off. Each call signs a new token, so a link posted now is valid for
// the configured time from now.
func (t *thread) pageLink() string {
	if t.b.cfg.PageLink == nil || t.rec.ID == 0 {
		return ""
	}
	return t.b.cfg.PageLink(t.rec.ID)
}

// withPageLink ends a run's footer with the link to the session page.
func withPageLink(footer, link string) string {
	if link == "" {
		return footer
	}
	return footer + " · [full session](" + link + ")"
}

// linkText answers !link.
func (t *thread) linkText() string {
	link := t.pageLink()
	if link == "" && t.b.cfg.PagesOff != "" {
		return t.b.cfg.PagesOff
	}
	if link == "" {
		return "Session pages are off here (the operator sets `http.public_url` and `http.session_key`)."
	}
	return "🔗 [This session's page](" + link + "): prompts, answers, every tool call with its output, pushes and cost. The link expires; `!link` makes a new one."
}
