package web

import (
	"strings"
)

// highlight colours a fenced code block: comments, strings, numbers and the
// keywords of a few common languages. It is a lexer of a page, not of a
// compiler: a rare construct may be coloured wrongly, never rendered
// unsafely, as every byte goes through esc inside a span of a fixed class.
// An unknown language is only escaped.
func highlight(lang, code string) string {
	spec, ok := languages[strings.ToLower(lang)]
	if !ok {
		return esc(code)
	}
	var b strings.Builder
	span := func(class, text string) { b.WriteString(`<span class="` + class + `">` + esc(text) + `</span>`) }
	for i := 0; i < len(code); {
		c := code[i]
		rest := code[i:]
		switch {
		case spec.line != "" && strings.HasPrefix(rest, spec.line) && (spec.line != "#" || i == 0 || !isWordByte(code[i-1]) && code[i-1] != '$'):
			n := strings.IndexByte(rest, '\n')
			if n < 0 {
				n = len(rest)
			}
			span("tok-c", rest[:n])
			i += n
		case spec.block && strings.HasPrefix(rest, "/*"):
			n := strings.Index(rest[2:], "*/")
			if n < 0 {
				n = len(rest)
			} else {
				n += 4
			}
			span("tok-c", rest[:n])
			i += n
		case c == '"' || c == '\'' || c == '`' && spec.backtick:
			j := 1
			for j < len(rest) && rest[j] != c && (c == '`' || rest[j] != '\n') {
				if rest[j] == '\\' {
					j++
				}
				j++
			}
			j = min(j+1, len(rest))
			span("tok-s", rest[:j])
			i += j
		case c >= '0' && c <= '9' && (i == 0 || !isWordByte(code[i-1])):
			j := 1
			for j < len(rest) && (isWordByte(rest[j]) || rest[j] == '.') && rest[j] < 0x80 {
				j++
			}
			span("tok-n", rest[:j])
			i += j
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := 1
			for j < len(rest) && rest[j] < 0x80 && isWordByte(rest[j]) {
				j++
			}
			if spec.keywords[rest[:j]] {
				span("tok-k", rest[:j])
			} else {
				b.WriteString(esc(rest[:j]))
			}
			i += j
		default:
			j := 1
			for j < len(rest) && rest[j]&0xC0 == 0x80 {
				j++
			}
			b.WriteString(esc(rest[:j]))
			i += j
		}
	}
	return b.String()
}

type language struct {
	line     string // line comment marker
	block    bool   // /* … */ comments
	backtick bool   // `…` strings (may span lines)
	keywords map[string]bool
}

func words(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

var languages = func() map[string]language {
	goLang := language{line: "//", block: true, backtick: true, keywords: words(`break case chan const continue default defer else
		fallthrough for func go goto if import interface map package range return select struct switch type var nil true false iota`)}
	js := language{line: "//", block: true, backtick: true, keywords: words(`async await break case catch class const continue
		default delete do else export extends false finally for from function if import in instanceof let new null of return
		super switch this throw true try typeof undefined var void while yield interface type enum implements`)}
	cLike := language{line: "//", block: true, keywords: words(`auto break case char class const continue default do double
		else enum extern final float for fn if impl import int let long loop match mod mut new null package private protected
		pub public return self short static struct super switch this throw trait true false try typedef use unsigned void
		where while`)}
	py := language{line: "#", keywords: words(`and as assert async await break class continue def del elif else except False
		finally for from global if import in is lambda None nonlocal not or pass raise return True try while with yield`)}
	sh := language{line: "#", keywords: words(`case do done elif else esac export fi for function if in local return then
		until while`)}
	sql := language{line: "--", block: true, keywords: words(`select from where insert into values update set delete create
		table index join left right inner outer on group by order having limit and or not null as distinct union
		SELECT FROM WHERE INSERT INTO VALUES UPDATE SET DELETE CREATE TABLE INDEX JOIN LEFT RIGHT INNER OUTER ON GROUP BY
		ORDER HAVING LIMIT AND OR NOT NULL AS DISTINCT UNION`)}
	yaml := language{line: "#", keywords: words(`true false null yes no`)}
	m := map[string]language{"go": goLang, "golang": goLang, "python": py, "py": py, "sh": sh, "bash": sh, "shell": sh,
		"console": sh, "zsh": sh, "sql": sql, "yaml": yaml, "yml": yaml, "toml": yaml}
	for _, n := range []string{"js", "javascript", "ts", "typescript", "jsx", "tsx", "json"} {
		m[n] = js
	}
	for _, n := range []string{"c", "h", "cpp", "c++", "cc", "java", "kotlin", "rust", "rs", "swift", "csharp", "cs", "scala"} {
		m[n] = cLike
	}
	return m
}()
