package slack

import (
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/threadsmith/threadsmith/chat/mdsplit"
)

// Mrkdwn converts the bridge's Markdown into Slack mrkdwn:
//
//   - **bold** and __bold__ become *bold*; *it* and _it_ become _it_;
//     ***both*** becomes *_both_*; ~~gone~~ becomes ~gone~.
//   - [label](url) becomes <url|label>, <https://…> and bare URLs <url>,
//     for web and mail links only: any other target ([x](!here), [x](@U1),
//     [x](#C1), [x](<!channel>)) stays literal text, since inside <…> Slack
//     would read it as a mention of a channel, a user group or a person.
//   - Headings become bold lines; bullets become •, task items ☐/☑;
//     numbered lists and block quotes stay; rules become a line.
//   - Code spans and fenced blocks are not converted; a fence loses its
//     language tag, which Slack would show as the first line of code, and
//     a ``` inside a block is broken with a zero-width space, since Slack
//     would end the block there (a ```go line in a ```` block).
//   - Tables, which Slack cannot draw, become code blocks so columns align.
//   - &, < and > are escaped everywhere except in the markup made here, code
//     included: Slack decodes them inside code too, and an unescaped <!channel>
//     or <@U…> in the model's output would notify people. The only < the
//     output holds opens a link to an http(s) or mailto URL, so it mentions
//     nobody, however the model spelled a mention (&lt;!here&gt; arrives as
//     &amp;lt;!here&amp;gt;, shown as written).
func Mrkdwn(md string) string {
	md = strings.ReplaceAll(md, "\r\n", "\n")
	lines := strings.Split(md, "\n")
	out := make([]string, 0, len(lines))
	var fence string // the open fence's marker ("```", "~~~~"); "" outside code
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if fence != "" {
			if mdsplit.ClosesFence(line, fence) {
				out = append(out, "```")
				fence = ""
				continue
			}
			out = append(out, escapeText(mdsplit.BreakFences(line)))
			continue
		}
		if f, _, _, ok := mdsplit.OpeningFence(line); ok {
			fence = f
			out = append(out, "```")
			continue
		}
		if isTableRow(line) && i+1 < len(lines) && tableDelim.MatchString(lines[i+1]) {
			out = append(out, "```")
			for ; i < len(lines) && isTableRow(lines[i]); i++ {
				out = append(out, escapeText(mdsplit.BreakFences(strings.TrimSpace(lines[i]))))
			}
			i--
			out = append(out, "```")
			continue
		}
		out = append(out, proseLine(convertLine(line)))
	}
	return strings.Join(out, "\n")
}

var (
	headingLine = regexp.MustCompile(`^ {0,3}(#{1,6})(?:[ \t]+(.*?))??(?:[ \t]+#+)?[ \t]*$`)
	ruleLine    = regexp.MustCompile(`^ {0,3}(?:(?:-[ \t]*){3,}|(?:\*[ \t]*){3,}|(?:_[ \t]*){3,})$`)
	quoteLine   = regexp.MustCompile(`^ {0,3}> ?(.*)$`)
	bulletLine  = regexp.MustCompile(`^([ \t]*)[-*+][ \t]+(.*)$`)
	taskItem    = regexp.MustCompile(`^\[([ xX])\][ \t]+(.*)$`)
	orderedLine = regexp.MustCompile(`^([ \t]*)(\d{1,9})[.)][ \t]+(.*)$`)
	tableDelim  = regexp.MustCompile(`^[ \t]*\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)+\|?[ \t]*$`)
)

func isTableRow(line string) bool {
	return strings.HasPrefix(strings.TrimSpace(line), "|")
}

// proseLine keeps a converted line of prose from beginning with ```, as
// \`\`\` (escaped, text in Markdown) does once unescaped: Slack would take
// it for a fence and turn the message's code inside out, and inCodeBlock
// would count it.
func proseLine(s string) string {
	if strings.HasPrefix(strings.TrimLeft(s, " \t"), "```") {
		return mdsplit.BreakFences(s)
	}
	return s
}

// convertLine converts one line outside code blocks.
func convertLine(line string) string {
	if strings.TrimSpace(line) == "" {
		return ""
	}
	if m := headingLine.FindStringSubmatch(line); m != nil {
		// Bold inside a bold line would close it early.
		text := strings.NewReplacer("**", "", "__", "").Replace(strings.TrimSpace(m[2]))
		if text == "" {
			return ""
		}
		return "*" + inline(text) + "*"
	}
	if ruleLine.MatchString(line) {
		return "──────────"
	}
	if m := quoteLine.FindStringSubmatch(line); m != nil {
		return "> " + convertLine(m[1])
	}
	if m := bulletLine.FindStringSubmatch(line); m != nil {
		mark, text := "•", m[2]
		if t := taskItem.FindStringSubmatch(text); t != nil {
			mark, text = "☐", t[2]
			if t[1] != " " {
				mark = "☑"
			}
		}
		return m[1] + mark + " " + inline(text)
	}
	if m := orderedLine.FindStringSubmatch(line); m != nil {
		return m[1] + m[2] + ". " + inline(m[3])
	}
	return inline(line)
}

// escapeText escapes the three characters Slack reserves.
func escapeText(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	return textEscaper.Replace(s)
}

var (
	textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	urlEscaper  = strings.NewReplacer("&", "&amp;", "<", "%3C", ">", "%3E", "|", "%7C", " ", "%20")
	// labelStrip drops Markdown formatting Slack does not show in link labels.
	labelStrip = strings.NewReplacer("**", "", "__", "", "~~", "", "`", "")
)

// atomBase is the first of the private-use runes that stand for already
// rendered pieces (code spans, links) while emphasis is matched around them.
const atomBase = 0xE000

const atomMax = 0xF8FF

var (
	autolink = regexp.MustCompile(`^<([A-Za-z][A-Za-z0-9+.-]{1,31}:[^\s<>]*)>`)
	// An address starts with a letter or digit and has no |: <!subteam^S1|@devs>
	// is Slack markup, not mail.
	autoMail = regexp.MustCompile(`^<([A-Za-z0-9][A-Za-z0-9.!#$%&'*+/=?^_{}~-]*@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*)>`)
	bareURL  = regexp.MustCompile(`^(?:https?://|www\.)[^\s<>]+`)
)

// inline converts the inline Markdown of one line.
func inline(s string) string {
	var atoms []string
	var b strings.Builder
	// noSpanEnd holds the backtick run lengths found to have no closing run
	// after some point: none closes later either, so runs of backticks stay
	// linear.
	noSpanEnd := map[int]bool{}
	lastParen := strings.LastIndexByte(s, ')')
	atom := func(rendered string) {
		if atomBase+len(atoms) > atomMax { // thousands of pieces: give up protecting them
			b.WriteString(rendered)
			return
		}
		b.WriteRune(rune(atomBase + len(atoms)))
		atoms = append(atoms, rendered)
	}
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '`':
			n := runLen(s[i:], '`')
			if !noSpanEnd[n] {
				if code, size, ok := codeSpan(s[i:]); ok {
					atom("`" + escapeText(code) + "`")
					i += size
					continue
				}
				noSpanEnd[n] = true
			}
			// an unmatched run is literal
			atom(s[i : i+n])
			i += n
			continue
		case c == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]):
			atom(escapeText(s[i+1 : i+2]))
			i += 2
			continue
		case c == '[' || (c == '!' && i+1 < len(s) && s[i+1] == '['):
			start := i
			if c == '!' {
				start++
			}
			if start > lastParen {
				break // no ) is left to end a link
			}
			if label, url, n, ok := link(s[start:]); ok {
				if r, ok := renderLink(url, label); ok {
					atom(r)
					i = start + n
					continue
				}
			}
		case c == '<':
			if m := autolink.FindStringSubmatch(s[i:]); m != nil && linkable(m[1]) {
				atom("<" + urlEscaper.Replace(m[1]) + ">")
				i += len(m[0])
				continue
			}
			if m := autoMail.FindStringSubmatch(s[i:]); m != nil {
				atom("<mailto:" + urlEscaper.Replace(m[1]) + "|" + escapeText(m[1]) + ">")
				i += len(m[0])
				continue
			}
		case c == 'h' || c == 'w':
			if i == 0 || !isWordByte(s[i-1]) {
				if m := bareURL.FindString(s[i:]); m != "" {
					m = trimURL(m)
					url := m
					if strings.HasPrefix(url, "www.") {
						url = "http://" + url
					}
					atom("<" + urlEscaper.Replace(url) + ">")
					i += len(m)
					continue
				}
			}
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r >= atomBase && r <= atomMax { // a literal private-use rune stays itself
			atom(string(r))
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	e := emphasis{atoms: atoms}
	return e.convert([]rune(b.String()))
}

// codeSpan parses a code span at the start of s: its content and length.
func codeSpan(s string) (string, int, bool) {
	n := runLen(s, '`')
	for j := n; j < len(s); {
		k := strings.IndexByte(s[j:], '`')
		if k < 0 {
			return "", 0, false
		}
		j += k
		m := runLen(s[j:], '`')
		if m == n {
			code := s[n:j]
			if len(code) >= 2 && code[0] == ' ' && code[len(code)-1] == ' ' && strings.TrimSpace(code) != "" {
				code = code[1 : len(code)-1]
			}
			return code, j + m, true
		}
		j += m
	}
	return "", 0, false
}

func runLen(s string, c byte) int {
	n := 0
	for n < len(s) && s[n] == c {
		n++
	}
	return n
}

// Bounds of what link parses: a longer label or destination is text. They
// keep a line full of [ or ( linear, where scanning to its end from every [
// would be quadratic (and Measure runs Mrkdwn on every chunk's lines).
const (
	maxLinkLabel = 1000
	maxLinkDest  = 2048
)

// link parses [label](destination "title") at the start of s.
func link(s string) (label, url string, n int, ok bool) {
	depth := 0
	end := -1
	for i := 0; i < len(s) && i <= maxLinkLabel && end < 0; i++ {
		switch s[i] {
		case '\\':
			i++
		case '[':
			depth++
		case ']':
			depth--
			if depth == 0 {
				end = i
			}
		}
	}
	if end < 0 || end+1 >= len(s) || s[end+1] != '(' {
		return "", "", 0, false
	}
	label = s[1:end]
	i := end + 2
	for i < len(s) && s[i] == ' ' {
		i++
	}
	destEnd := min(len(s), i+maxLinkDest)
	if i < len(s) && s[i] == '<' {
		k := strings.IndexByte(s[i:destEnd], '>')
		if k < 0 {
			return "", "", 0, false
		}
		url = s[i+1 : i+k]
		i += k + 1
	} else {
		parens, start := 0, i
		for ; i < destEnd; i++ {
			if s[i] == '(' {
				parens++
			} else if s[i] == ')' {
				if parens == 0 {
					break
				}
				parens--
			} else if s[i] == ' ' || s[i] == '\t' {
				break
			}
		}
		url = s[start:i]
	}
	for i < len(s) && s[i] == ' ' {
		i++
	}
	if i < len(s) && (s[i] == '"' || s[i] == '\'') { // a title, which Slack cannot show
		k := strings.IndexByte(s[i+1:min(len(s), i+1+maxLinkLabel)], s[i])
		if k < 0 {
			return "", "", 0, false
		}
		i += k + 2
		for i < len(s) && s[i] == ' ' {
			i++
		}
	}
	if i >= len(s) || s[i] != ')' || url == "" {
		return "", "", 0, false
	}
	return label, url, i + 1, true
}

// renderLink renders a Markdown link, or ok false when its target is no
// web or mail URL (the caller then leaves the Markdown as text).
func renderLink(url, label string) (string, bool) {
	if !linkable(url) {
		return "", false
	}
	label = strings.TrimSpace(labelStrip.Replace(label))
	if label == "" || label == url {
		return "<" + urlEscaper.Replace(url) + ">", true
	}
	return "<" + urlEscaper.Replace(url) + "|" + escapeText(label) + ">", true
}

// linkable reports whether a link target may go inside <…>: only web and
// mail URLs. Slack reads <!…> as special mentions, <@…> as people and <#…>
// as channels, and gives other schemes no meaning worth the risk.
func linkable(url string) bool {
	scheme, rest, ok := strings.Cut(url, ":")
	if !ok || rest == "" {
		return false
	}
	switch strings.ToLower(scheme) {
	case "http", "https":
		return strings.HasPrefix(rest, "//") && len(rest) > 2
	case "mailto":
		return true
	}
	return false
}

// trimURL drops the punctuation that ends a sentence rather than the URL, and
// a closing parenthesis the URL did not open (GFM's autolink rules).
func trimURL(u string) string {
	for len(u) > 0 {
		last := u[len(u)-1]
		switch {
		case strings.IndexByte("?!.,:;*_~'\"", last) >= 0:
			u = u[:len(u)-1]
		case last == ')' && strings.Count(u, ")") > strings.Count(u, "("):
			u = u[:len(u)-1]
		default:
			return u
		}
	}
	return u
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

// maxTextRunes is the most text the adapter sends in one message: Slack
// refuses chat.update text over 4,000 characters (msg_too_long), and a post
// that could not be edited later is no better.
const maxTextRunes = 4000

const truncatedNotice = "\n\n_… truncated: a Slack message holds at most 4,000 characters._"

// Measure is the length of Markdown text as Slack receives it: the runes of
// its mrkdwn. The bridge splits long text by it (chat.Limits.Measure), so
// that the 3,500-character chunks hold after escaping, which can make text
// several times longer (every < is &lt;).
func Measure(md string) int { return utf8.RuneCountInString(Mrkdwn(md)) }

// fitText cuts mrkdwn that exceeds maxTextRunes, at a point that splits no
// entity or <link>, closes a code block left open, and says so. The bridge
// splits text by Measure far below the limit: this is a safety net.
func fitText(s string) string {
	if utf8.RuneCountInString(s) <= maxTextRunes {
		return s
	}
	keep := maxTextRunes - utf8.RuneCountInString(truncatedNotice) - len("\n```")
	cut := 0
	for i := range s {
		if keep == 0 {
			cut = i
			break
		}
		keep--
	}
	t := s[:cut]
	if lt := strings.LastIndexByte(t, '<'); lt > strings.LastIndexByte(t, '>') {
		t = t[:lt]
	}
	if amp := strings.LastIndexByte(t, '&'); amp >= 0 && amp > len(t)-6 && !strings.Contains(t[amp:], ";") {
		t = t[:amp]
	}
	if inCodeBlock(t) {
		t += "\n```"
	}
	return t + truncatedNotice
}

// inCodeBlock reports whether mrkdwn from Mrkdwn ends inside a code block.
// Mrkdwn writes every fence as a line of its own, "```", and breaks every
// run of three backticks inside a block; a ``` in the middle of a line of
// prose is text, not a fence, and is not counted.
func inCodeBlock(s string) bool {
	open := false
	for line := range strings.Lines(s) {
		if strings.TrimRight(line, "\n") == "```" {
			open = !open
		}
	}
	return open
}
