package web

import (
	"html/template"
	"net/url"
	"regexp"
	"strings"
	"unicode"
)

// markdown renders the model's (or a person's) Markdown as HTML that cannot
// run anything. It is deliberately small and conservative rather than a full
// CommonMark renderer: every character of the input reaches the output
// through HTML escaping, the only tags emitted are the ones written here
// (no attributes but href, rel, class on code, and those from fixed sets),
// raw HTML in the input is shown as text, and links are kept only when
// their scheme is http, https or mailto. Images are shown as links: a page
// must not fetch what the model names.
//
// Supported: fenced code blocks (with a language label, highlighted by
// highlight.go), headings, block
// quotes, lists, horizontal rules, paragraphs with line breaks; inline code,
// bold, italic, strikethrough, links, autolinks and bare URLs.
func markdown(src string) template.HTML {
	var b strings.Builder
	renderBlocks(&b, strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n"), 0)
	return template.HTML(b.String())
}

// maxQuoteDepth bounds nested block quotes (each level recurses).
const maxQuoteDepth = 8

var (
	fenceRe   = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})\\s*([^`\\s]*)")
	headingRe = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	bulletRe  = regexp.MustCompile(`^ {0,3}[-*+]\s+(.*)$`)
	orderedRe = regexp.MustCompile(`^ {0,3}\d{1,9}[.)]\s+(.*)$`)
	ruleRe    = regexp.MustCompile(`^ {0,3}(?:(?:-\s*){3,}|(?:\*\s*){3,}|(?:_\s*){3,})$`)
	quoteRe   = regexp.MustCompile(`^ {0,3}> ?(.*)$`)
	langRe    = regexp.MustCompile(`^[A-Za-z0-9_+#.-]{1,32}$`)
)

func renderBlocks(b *strings.Builder, lines []string, depth int) {
	for i := 0; i < len(lines); {
		line := lines[i]
		switch {
		case strings.TrimSpace(line) == "":
			i++
		case fenceRe.MatchString(line):
			m := fenceRe.FindStringSubmatch(line)
			fence, lang := m[1], m[2]
			i++
			var code []string
			for ; i < len(lines); i++ {
				t := strings.TrimSpace(lines[i])
				if strings.HasPrefix(t, fence[:1]) && strings.Trim(t, fence[:1]) == "" && len(t) >= len(fence) {
					i++
					break
				}
				code = append(code, lines[i])
			}
			b.WriteString(`<pre class="code">`)
			if langRe.MatchString(lang) {
				b.WriteString(`<span class="lang">` + esc(lang) + `</span>`)
			}
			b.WriteString(`<code>` + highlight(lang, strings.Join(code, "\n")) + "</code></pre>\n")
		case headingRe.MatchString(line):
			m := headingRe.FindStringSubmatch(line)
			// Shifted by two: the page's own h1 and h2 frame the transcript.
			level := string(rune('0' + min(len(m[1])+2, 6)))
			b.WriteString("<h" + level + ">" + inline(m[2], false) + "</h" + level + ">\n")
			i++
		case ruleRe.MatchString(line):
			b.WriteString("<hr>\n")
			i++
		case quoteRe.MatchString(line):
			var inner []string
			for ; i < len(lines) && quoteRe.MatchString(lines[i]); i++ {
				inner = append(inner, quoteRe.FindStringSubmatch(lines[i])[1])
			}
			b.WriteString("<blockquote>")
			if depth < maxQuoteDepth {
				renderBlocks(b, inner, depth+1)
			} else {
				b.WriteString("<p>" + esc(strings.Join(inner, "\n")) + "</p>")
			}
			b.WriteString("</blockquote>\n")
		case bulletRe.MatchString(line) || orderedRe.MatchString(line):
			re, tag := bulletRe, "ul"
			if !bulletRe.MatchString(line) {
				re, tag = orderedRe, "ol"
			}
			b.WriteString("<" + tag + ">")
			for i < len(lines) && re.MatchString(lines[i]) {
				item := []string{re.FindStringSubmatch(lines[i])[1]}
				i++
				// Indented lines continue the item.
				for i < len(lines) && strings.HasPrefix(lines[i], "  ") && strings.TrimSpace(lines[i]) != "" &&
					!bulletRe.MatchString(lines[i]) && !orderedRe.MatchString(lines[i]) {
					item = append(item, strings.TrimSpace(lines[i]))
					i++
				}
				b.WriteString("<li>" + inlineLines(item) + "</li>")
			}
			b.WriteString("</" + tag + ">\n")
		default:
			var para []string
			for ; i < len(lines) && strings.TrimSpace(lines[i]) != "" && !startsBlock(lines[i]); i++ {
				para = append(para, lines[i])
			}
			if len(para) == 0 { // cannot happen (startsBlock matched above), but never loop
				para, i = append(para, lines[i]), i+1
			}
			b.WriteString("<p>" + inlineLines(para) + "</p>\n")
		}
	}
}

func startsBlock(line string) bool {
	return fenceRe.MatchString(line) || headingRe.MatchString(line) || ruleRe.MatchString(line) ||
		quoteRe.MatchString(line) || bulletRe.MatchString(line) || orderedRe.MatchString(line)
}

func inlineLines(lines []string) string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = inline(strings.TrimSpace(l), false)
	}
	return strings.Join(out, "<br>\n")
}

// inline renders one line's inline Markdown. inLink is set inside a link's
// text: links do not nest.
func inline(s string, inLink bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		rest := s[i:]
		switch {
		case c == '\\' && i+1 < len(s) && strings.IndexByte("\\`*_{}[]()#+-.!~<>|", s[i+1]) >= 0:
			b.WriteString(esc(s[i+1 : i+2]))
			i += 2
			continue
		case c == '`':
			n := len(rest) - len(strings.TrimLeft(rest, "`"))
			if end := strings.Index(rest[n:], rest[:n]); end >= 0 {
				b.WriteString("<code>" + esc(strings.TrimSpace(rest[n:n+end])) + "</code>")
				i += n + end + n
				continue
			}
			b.WriteString(esc(rest[:n]))
			i += n
			continue
		case c == '!' && strings.HasPrefix(rest, "![") && !inLink:
			if text, dest, n, ok := linkAt(rest[1:]); ok {
				label := "image"
				if text != "" {
					label = "image: " + text
				}
				b.WriteString(anchor(dest, esc(label)))
				i += 1 + n
				continue
			}
		case c == '[' && !inLink:
			if text, dest, n, ok := linkAt(rest); ok {
				b.WriteString(anchor(dest, inline(text, true)))
				i += n
				continue
			}
		case c == '<' && !inLink:
			if end := strings.IndexByte(rest[:min(len(rest), maxLinkScan)], '>'); end > 1 {
				if u := rest[1:end]; !strings.ContainsAny(u, " \t<") && (strings.Contains(u, ":") || strings.Contains(u, "@")) {
					dest := u
					if !strings.Contains(u, ":") {
						dest = "mailto:" + u
					}
					b.WriteString(anchor(dest, esc(u)))
					i += end + 1
					continue
				}
			}
		case (c == 'h' || c == 'H') && !inLink && urlStart(s, i):
			n := bareURLLen(rest)
			b.WriteString(anchor(rest[:n], esc(rest[:n])))
			i += n
			continue
		case c == '*' || c == '_' || c == '~':
			if html, n, ok := emphasis(s, i, inLink); ok {
				b.WriteString(html)
				i += n
				continue
			}
		}
		// One character (a whole UTF-8 sequence stays together through esc).
		j := i + 1
		for j < len(s) && s[j]&0xC0 == 0x80 {
			j++
		}
		b.WriteString(esc(s[i:j]))
		i = j
	}
	return b.String()
}

// emphasis renders **bold**, __bold__, *em*, _em_ or ~~strike~~ starting at
// s[i], returning the HTML and the bytes consumed.
func emphasis(s string, i int, inLink bool) (string, int, bool) {
	rest := s[i:]
	for _, d := range []struct{ delim, tag string }{{"**", "strong"}, {"__", "strong"}, {"~~", "del"}, {"*", "em"}, {"_", "em"}} {
		if !strings.HasPrefix(rest, d.delim) {
			continue
		}
		// _ inside a word (snake_case) is not emphasis.
		if d.delim[0] == '_' && i > 0 && isWordByte(s[i-1]) {
			return "", 0, false
		}
		body := rest[len(d.delim):]
		if body == "" || body[0] == ' ' {
			continue
		}
		end := strings.Index(body, d.delim)
		if end <= 0 || body[end-1] == ' ' {
			continue
		}
		after := len(d.delim) + end + len(d.delim)
		if d.delim[0] == '_' && after < len(rest) && isWordByte(rest[after]) {
			continue
		}
		return "<" + d.tag + ">" + inline(body[:end], inLink) + "</" + d.tag + ">", after, true
	}
	return "", 0, false
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 0x80 || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c))
}

// maxLinkScan bounds how far a link's text, destination or an autolink is
// looked for: without it, a line of many "[" or "<" takes quadratic time.
const maxLinkScan = 2048

// linkAt parses "[text](dest)" at the start of s.
func linkAt(s string) (text, dest string, n int, ok bool) {
	depth := 0
	for i := 0; i < min(len(s), maxLinkScan); i++ {
		switch s[i] {
		case '\\':
			i++
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				if i+1 >= len(s) || s[i+1] != '(' {
					return "", "", 0, false
				}
				end := strings.IndexByte(s[i+2:min(len(s), i+2+maxLinkScan)], ')')
				if end < 0 {
					return "", "", 0, false
				}
				dest = strings.TrimSpace(s[i+2 : i+2+end])
				// A title ("…") after the destination is dropped.
				if sp := strings.IndexAny(dest, " \t"); sp >= 0 {
					dest = dest[:sp]
				}
				return s[1:i], strings.Trim(dest, "<>"), i + 2 + end + 1, true
			}
		}
	}
	return "", "", 0, false
}

// urlStart reports whether a bare http(s) URL starts at s[i].
func urlStart(s string, i int) bool {
	if i > 0 && isWordByte(s[i-1]) {
		return false
	}
	l := strings.ToLower(s[i:min(len(s), i+8)])
	return strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://")
}

// bareURLLen is the length of the URL at the start of s: up to a space or a
// character that cannot end a URL in prose.
func bareURLLen(s string) int {
	n := strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r == '<' || r == '>' || r == '"' || r == '`' })
	if n < 0 {
		n = len(s)
	}
	for n > 0 && strings.ContainsRune(".,;:!?)]}'*_", rune(s[n-1])) {
		n--
	}
	return n
}

// anchor returns a link to dest around the already-escaped label, or the
// label and the destination as plain text when dest is not a safe URL.
func anchor(dest, label string) string {
	if href, ok := safeURL(dest); ok {
		return `<a href="` + esc(href) + `" rel="nofollow noopener noreferrer" target="_blank">` + label + `</a>`
	}
	return label + ` <span class="unsafe-link">(` + esc(dest) + `)</span>`
}

// safeURL accepts absolute http, https and mailto URLs only: javascript:,
// data:, vbscript:, file: and relative URLs (which would reach this server
// with the viewer's cookie) are refused, however they are spelled.
func safeURL(raw string) (string, bool) {
	if raw == "" || strings.IndexFunc(raw, func(r rune) bool { return r < 0x21 || r == 0x7f || unicode.IsSpace(r) }) >= 0 {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", false
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
		if u.Host == "" {
			return "", false
		}
	case "mailto":
	default:
		return "", false
	}
	return u.String(), true
}

func esc(s string) string { return template.HTMLEscapeString(s) }
