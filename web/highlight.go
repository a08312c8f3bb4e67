package web

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/alecthomas/chroma/v2"
	chromahtml "github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"
)

// maxHighlight is the largest code block highlighted, and
// maxHighlightTotal the most code one text highlights; past them code is
// only escaped. A lexer can take time quadratic in a block's length (an
// unclosed comment is looked for to the end at every token): the bounds
// keep one text's highlighting within about a second.
const (
	maxHighlight      = 32 << 10
	maxHighlightTotal = 128 << 10
)

// highlight colours a fenced code block with chroma's lexer for lang: each
// token is escaped inside a span whose class names its type ("tok-" and
// chroma's short name: tok-k a keyword, tok-gi an inserted diff line), and
// the stylesheet (highlightCSS) colours the classes: the page needs no
// inline style. An unknown or missing language, or a block the lexer fails
// on, is only escaped.
func highlight(lang, code string) string {
	if lang == "" {
		return esc(code)
	}
	lexer := lexerFor(lang)
	if lexer == nil {
		return esc(code)
	}
	it, err := chroma.Coalesce(lexer).Tokenise(nil, code)
	if err != nil {
		return esc(code)
	}
	var b strings.Builder
	// Lexers may append a newline the code did not have: the output stops
	// at the code's own length.
	left := len(code)
	for tok := it(); tok != chroma.EOF && left > 0; tok = it() {
		v := tok.Value
		if len(v) > left {
			v = v[:left]
		}
		left -= len(v)
		if class := tokenClass(tok.Type); class != "" {
			b.WriteString(`<span class="tok-` + class + `">` + esc(v) + `</span>`)
		} else {
			b.WriteString(esc(v))
		}
	}
	if left > 0 { // the lexer stopped early: the rest is shown plain
		b.WriteString(esc(code[len(code)-left:]))
	}
	return b.String()
}

// lexerFor is chroma's lexer named lang: by name, alias or file extension
// ("yml"), case aside. chroma's own lookup tries every lexer's file
// patterns for a name it does not know, tens of milliseconds each time;
// this one is a map, built at the first use.
func lexerFor(lang string) chroma.Lexer {
	return lexerNames()[strings.ToLower(lang)]
}

var lexerNames = sync.OnceValue(func() map[string]chroma.Lexer {
	names := map[string]chroma.Lexer{}
	byExt := map[string]chroma.Lexer{}
	for _, l := range lexers.GlobalLexerRegistry.Lexers {
		cfg := l.Config()
		for _, f := range cfg.Filenames {
			ext, ok := strings.CutPrefix(f, "*.")
			if !ok || strings.ContainsAny(ext, "*?[]{}") {
				continue
			}
			if prev, ok := byExt[strings.ToLower(ext)]; !ok || cfg.Priority > prev.Config().Priority {
				byExt[strings.ToLower(ext)] = l
			}
		}
	}
	maps.Copy(names, byExt)
	for _, l := range lexers.GlobalLexerRegistry.Lexers {
		cfg := l.Config()
		for _, a := range cfg.Aliases {
			names[strings.ToLower(a)] = l
		}
	}
	for _, l := range lexers.GlobalLexerRegistry.Lexers {
		names[strings.ToLower(l.Config().Name)] = l
	}
	return names
})

// tokenClass is chroma's short class name for t or its nearest typed
// parent; plain text and whitespace have none.
func tokenClass(t chroma.TokenType) string {
	for ; t != 0; t = t.Parent() {
		if class, ok := chroma.StandardTypes[t]; ok {
			if t == chroma.Text || t == chroma.TextWhitespace {
				return ""
			}
			return class
		}
	}
	return ""
}

// highlightCSS is the stylesheet of the tok- classes: chroma's "github"
// style, and "github-dark" for a dark colour scheme (where a class the dark
// style leaves plain drops the light style's colours). It is served after
// assets/style.css.
var highlightCSS = func() string {
	var b strings.Builder
	light := styleRules(styles.Get("github"))
	dark := styleRules(styles.Get("github-dark"))
	writeRules(&b, light, "")
	for class := range light {
		if _, ok := dark[class]; !ok {
			dark[class] = "color: inherit; background-color: transparent; font-weight: inherit; font-style: inherit; text-decoration: inherit"
		}
	}
	b.WriteString("@media (prefers-color-scheme: dark) {\n")
	writeRules(&b, dark, "  ")
	b.WriteString("}\n")
	return b.String()
}()

// styleRules maps each token class to its CSS declarations in style.
func styleRules(style *chroma.Style) map[string]string {
	bg := style.Get(chroma.Background)
	rules := map[string]string{}
	for t, class := range chroma.StandardTypes {
		if t < 0 || class == "" || tokenClass(t) != class {
			continue // the page's own rules style the block and its lines
		}
		if css := chromahtml.StyleEntryToCSS(style.Get(t).Sub(bg)); css != "" {
			rules[class] = css
		}
	}
	return rules
}

func writeRules(b *strings.Builder, rules map[string]string, indent string) {
	for _, class := range slices.Sorted(maps.Keys(rules)) {
		fmt.Fprintf(b, "%s.tok-%s { %s; }\n", indent, class, rules[class])
	}
}
