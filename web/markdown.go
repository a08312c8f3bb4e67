package web

import (
	"bytes"
	"html/template"
	"log/slog"
	"net/url"
	"regexp"
	"strings"
	"unicode"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/renderer"
	"github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// markdown renders the model's (or a person's) Markdown as HTML that cannot
// run anything. goldmark parses it as GitHub Flavored Markdown (tables,
// task lists, strikethrough, bare URLs) and the node renderers below write
// every node the page shows; bluemonday then keeps only the elements and
// attributes of mdPolicy, whatever the renderers wrote.
//
// Rules the renderers keep: raw HTML in the input is shown as text; links
// are kept only when their scheme is http, https or mailto (others show
// their label and destination as text); images are shown as links (a page
// must not fetch what the model names); headings are shifted by two levels
// (the page's own h1 and h2 frame the transcript); code blocks are
// highlighted by chroma with class-based spans (highlight.go); a line break
// in a paragraph is kept, as chat writes it.
func markdown(src string) template.HTML {
	if !withinBudget(src) {
		return plain(src)
	}
	source := []byte(src)
	doc := md.Parser().Parse(text.NewReader(source))
	budget := maxHighlightTotal
	doc.OwnerDocument().AddMeta(highlightBudget, &budget)
	var buf bytes.Buffer
	if err := md.Renderer().Render(&buf, source, doc); err != nil {
		// The renderers write to memory and do not fail; were one to, the
		// text is still shown.
		slog.Warn("rendering Markdown", "err", err)
		return plain(src)
	}
	return template.HTML(mdPolicy.SanitizeReader(&buf).String())
}

// plain shows src as preformatted text.
func plain(src string) template.HTML {
	return template.HTML(`<pre class="code"><code>` + esc(src) + "</code></pre>\n")
}

// Bounds on what is parsed as Markdown; a text past one is shown as plain
// preformatted text. Parsing takes time quadratic in how deep blocks nest
// (every line is matched against every open block) and in how many link
// destinations open inside one run of text without a space (each is
// scanned to the run's end): without the bounds one answer could hold a
// page's rendering for minutes. Within them it takes a few hundred
// milliseconds at worst.
const (
	maxMarkdown     = 1 << 20 // bytes
	maxNestCost     = 1 << 23 // the sum over lines of the square of the quote and list markers and indentation before a line's text
	maxLinkScanCost = 1 << 22 // link destinations opened in a run without a space, times the run's length
)

// withinBudget reports whether src is within the bounds above, in one pass.
// Lines inside fenced code are not blocks, and are not counted.
func withinBudget(src string) bool {
	if len(src) > maxMarkdown {
		return false
	}
	nest, links := 0, 0
	var fence string
	for line := range strings.Lines(src) {
		prefix := blockPrefix(line)
		rest := strings.TrimLeft(line, " \t>")
		switch {
		case fence != "":
			if strings.HasPrefix(rest, fence) {
				fence = ""
			}
			continue
		case strings.HasPrefix(rest, "```"):
			fence = "```"
		case strings.HasPrefix(rest, "~~~"):
			fence = "~~~"
		}
		if nest += prefix * prefix; nest > maxNestCost {
			return false
		}
		for run := range strings.FieldsSeq(line) {
			if n := strings.Count(run, "]("); n > 1 {
				if links += n * len(run); links > maxLinkScanCost {
					return false
				}
			}
		}
	}
	return true
}

// blockPrefix is the length of the quote markers, list markers and
// indentation that open or continue blocks at the start of line: a list
// marker ("-", "*", "+", or up to nine digits and "." or ")") counts only
// when a space, a tab or the line's end follows it, as only then does it
// open a list. A long run of digits or dashes (a big number, a rule) nests
// nothing and costs nothing.
func blockPrefix(line string) int {
	ends := func(i int) bool { return i >= len(line) || strings.IndexByte(" \t\r\n", line[i]) >= 0 }
	i := 0
	for i < len(line) {
		switch c := line[i]; {
		case c == ' ' || c == '\t' || c == '>':
			i++
		case (c == '-' || c == '*' || c == '+') && ends(i+1):
			i++
		case c >= '0' && c <= '9':
			j := i
			for j < len(line) && j-i < 10 && line[j] >= '0' && line[j] <= '9' {
				j++
			}
			if j-i > 9 || j >= len(line) || (line[j] != '.' && line[j] != ')') || !ends(j+1) {
				return i
			}
			i = j + 1
		default:
			return i
		}
	}
	return i
}

var md = goldmark.New(
	goldmark.WithExtensions(
		extension.NewTable(extension.WithTableCellAlignMethod(extension.TableCellAlignAttribute)),
		extension.Strikethrough, extension.Linkify, extension.TaskList),
	goldmark.WithRendererOptions(html.WithHardWraps(),
		renderer.WithNodeRenderers(util.Prioritized(pageRenderer{}, 1))),
)

// mdPolicy is the allowlist every rendered Markdown passes: the elements
// and attributes the renderers write, links only to absolute http(s) and
// mailto URLs with rel="nofollow noopener noreferrer", and nothing else.
var mdPolicy = func() *bluemonday.Policy {
	p := bluemonday.NewPolicy()
	p.AllowElements("p", "br", "hr", "code", "strong", "em", "del", "h3", "h4", "h5", "h6",
		"ul", "li", "blockquote", "table", "thead", "tbody", "tr")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^code$`)).OnElements("pre")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^(tok-[a-z0-9]{1,4}|lang|unsafe-link|task|task done)$`)).OnElements("span")
	p.AllowAttrs("start").Matching(regexp.MustCompile(`^[0-9]{1,9}$`)).OnElements("ol")
	p.AllowElements("ol")
	p.AllowAttrs("align").Matching(regexp.MustCompile(`^(left|right|center)$`)).OnElements("th", "td")
	p.AllowElements("th", "td")
	p.AllowAttrs("href").OnElements("a")
	p.AllowAttrs("rel").Matching(regexp.MustCompile(`^nofollow noopener noreferrer$`)).OnElements("a")
	p.AllowAttrs("target").Matching(regexp.MustCompile(`^_blank$`)).OnElements("a")
	p.AllowURLSchemes("http", "https", "mailto")
	p.AllowRelativeURLs(false)
	p.RequireParseableURLs(true)
	p.RequireNoFollowOnLinks(true)
	p.RequireNoReferrerOnLinks(true)
	p.AddTargetBlankToFullyQualifiedLinks(true)
	return p
}()

// pageRenderer writes the nodes whose HTML the page decides: it overrides
// goldmark's renderers for them.
type pageRenderer struct{}

func (pageRenderer) RegisterFuncs(r renderer.NodeRendererFuncRegisterer) {
	r.Register(ast.KindHeading, renderHeading)
	r.Register(ast.KindFencedCodeBlock, renderCodeBlock)
	r.Register(ast.KindCodeBlock, renderCodeBlock)
	r.Register(ast.KindHTMLBlock, renderHTMLBlock)
	r.Register(ast.KindRawHTML, renderRawHTML)
	r.Register(ast.KindLink, renderLink)
	r.Register(ast.KindAutoLink, renderAutoLink)
	r.Register(ast.KindImage, renderImage)
	r.Register(east.KindTaskCheckBox, renderTaskCheckBox)
}

func renderHeading(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	level := string(rune('0' + min(node.(*ast.Heading).Level+2, 6)))
	if entering {
		_, _ = w.WriteString("<h" + level + ">")
	} else {
		_, _ = w.WriteString("</h" + level + ">\n")
	}
	return ast.WalkContinue, nil
}

// highlightBudget is the document's key of the bytes of code its text may
// still highlight (an *int).
const highlightBudget = "threadsmith.highlight"

// langRe is what a code block's language label may be.
var langRe = regexp.MustCompile(`^[A-Za-z0-9_+#.-]{1,32}$`)

func renderCodeBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	var lang string
	if f, ok := node.(*ast.FencedCodeBlock); ok {
		lang = string(f.Language(source))
	}
	var code strings.Builder
	lines := node.Lines()
	for i := range lines.Len() {
		seg := lines.At(i)
		code.Write(seg.Value(source))
	}
	_, _ = w.WriteString(`<pre class="code">`)
	if langRe.MatchString(lang) {
		_, _ = w.WriteString(`<span class="lang">` + esc(lang) + `</span>`)
	}
	src := strings.TrimSuffix(code.String(), "\n")
	if budget, ok := node.OwnerDocument().Meta()[highlightBudget].(*int); ok && len(src) <= min(*budget, maxHighlight) {
		*budget -= len(src)
	} else {
		lang = "" // shown plain
	}
	_, _ = w.WriteString("<code>" + highlight(lang, src) + "</code></pre>\n")
	return ast.WalkSkipChildren, nil
}

// renderHTMLBlock shows a block of raw HTML as the text it is.
func renderHTMLBlock(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.HTMLBlock)
	var text strings.Builder
	lines := n.Lines()
	for i := range lines.Len() {
		seg := lines.At(i)
		text.Write(seg.Value(source))
	}
	if n.HasClosure() {
		text.Write(n.ClosureLine.Value(source))
	}
	_, _ = w.WriteString("<p>" + strings.ReplaceAll(esc(strings.TrimRight(text.String(), "\n")), "\n", "<br>\n") + "</p>\n")
	return ast.WalkSkipChildren, nil
}

// renderRawHTML shows inline raw HTML as the text it is.
func renderRawHTML(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	segs := node.(*ast.RawHTML).Segments
	for i := range segs.Len() {
		seg := segs.At(i)
		_, _ = w.WriteString(esc(string(seg.Value(source))))
	}
	return ast.WalkSkipChildren, nil
}

func renderLink(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	dest := string(node.(*ast.Link).Destination)
	href, ok := safeURL(dest)
	switch {
	case ok && entering:
		_, _ = w.WriteString(openAnchor(href))
	case ok:
		_, _ = w.WriteString("</a>")
	case !entering:
		_, _ = w.WriteString(unsafeLink(dest))
	}
	return ast.WalkContinue, nil
}

func renderAutoLink(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	n := node.(*ast.AutoLink)
	dest, label := string(n.URL(source)), esc(string(n.Label(source)))
	if n.AutoLinkType == ast.AutoLinkEmail && !strings.HasPrefix(strings.ToLower(dest), "mailto:") {
		dest = "mailto:" + dest
	}
	_, _ = w.WriteString(anchor(dest, label))
	return ast.WalkContinue, nil
}

// renderImage shows an image as a link to it, labelled with its text.
func renderImage(w util.BufWriter, source []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkSkipChildren, nil
	}
	n := node.(*ast.Image)
	label := "image"
	if alt := plainText(n, source); alt != "" {
		label = "image: " + alt
	}
	_, _ = w.WriteString(anchor(string(n.Destination), esc(label)))
	return ast.WalkSkipChildren, nil
}

// plainText is the text under n without its markup.
func plainText(n ast.Node, source []byte) string {
	var b strings.Builder
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch t := c.(type) {
		case *ast.Text:
			b.Write(t.Segment.Value(source))
		case *ast.String:
			b.Write(t.Value)
		case *ast.RawHTML:
			for i := range t.Segments.Len() {
				seg := t.Segments.At(i)
				b.Write(seg.Value(source))
			}
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// renderTaskCheckBox shows a task's box as a character: the page has no
// form elements.
func renderTaskCheckBox(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	if node.(*east.TaskCheckBox).IsChecked {
		_, _ = w.WriteString(`<span class="task done">☑</span> `)
	} else {
		_, _ = w.WriteString(`<span class="task">☐</span> `)
	}
	return ast.WalkContinue, nil
}

// anchor returns a link to dest around the already-escaped label, or the
// label and the destination as plain text when dest is not a safe URL.
func anchor(dest, label string) string {
	if href, ok := safeURL(dest); ok {
		return openAnchor(href) + label + "</a>"
	}
	return label + unsafeLink(dest)
}

func openAnchor(href string) string {
	return `<a href="` + esc(href) + `" rel="nofollow noopener noreferrer" target="_blank">`
}

func unsafeLink(dest string) string {
	return ` <span class="unsafe-link">(` + esc(dest) + `)</span>`
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
