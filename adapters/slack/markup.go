package slack

import (
	"context"
	"strings"
)

// plain turns Slack markup into what the person typed: <@U…> becomes @name
// (users.info, cached), <#C…|name> #name, <url|label> "label (url)", <url> the
// url, <!here> @here, and &amp; &lt; &gt; their characters. The adapter applies
// it once, to every message text it hands on (chat.Inbound, History), so the
// bridge and everything after it (model, storage, pages, commits, pull
// requests) see plain text; applying it again would unescape twice ("&amp;lt;"
// typed as "&lt;" would become "<"). Text sent back to Slack is escaped again
// by the mrkdwn conversion.
func (a *Adapter) plain(ctx context.Context, text string) string {
	return plainText(text, func(id string) string { return a.users.author(ctx, id).Name })
}

var unescaper = strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&")

// plainText converts Slack markup; userName resolves a user id ("" when
// unknown). Slack escapes a literal '<' as &lt;, so every '<' starts markup.
func plainText(text string, userName func(id string) string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(text, '<')
		if i < 0 {
			break
		}
		j := strings.IndexByte(text[i:], '>')
		if j < 0 {
			break
		}
		b.WriteString(unescaper.Replace(text[:i]))
		b.WriteString(plainToken(text[i+1:i+j], userName))
		text = text[i+j+1:]
	}
	b.WriteString(unescaper.Replace(text))
	return b.String()
}

// plainToken converts the inside of one <…>.
func plainToken(tok string, userName func(id string) string) string {
	target, label, _ := strings.Cut(tok, "|")
	label = unescaper.Replace(label)
	switch {
	case strings.HasPrefix(target, "@"):
		id := target[1:]
		if name := userName(id); name != "" {
			return "@" + name
		}
		if label != "" {
			return "@" + strings.TrimPrefix(label, "@")
		}
		return "@" + id
	case strings.HasPrefix(target, "#"):
		if label != "" {
			return "#" + label
		}
		return target
	case strings.HasPrefix(target, "!"):
		kw := target[1:]
		switch {
		case kw == "here" || kw == "channel" || kw == "everyone":
			return "@" + kw
		case label != "":
			return label // <!subteam^S1|@team>, <!date^…|fallback>
		case strings.HasPrefix(kw, "subteam^"):
			return "@" + strings.TrimPrefix(kw, "subteam^")
		}
		return "@" + kw
	}
	url := unescaper.Replace(target)
	if addr, ok := strings.CutPrefix(url, "mailto:"); ok && (label == "" || label == addr) {
		return addr
	}
	if label == "" || label == url {
		return url
	}
	return label + " (" + url + ")"
}
