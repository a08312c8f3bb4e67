// Package discordspec checks REST requests against Discord's official OpenAPI
// description (github.com/discord/discord-api-spec, specs/openapi.json),
// vendored in openapi.json with the paths the fake Discord serves and the
// schemas they reference (see README.md for the upstream commit).
//
// Check says whether Discord would accept a request's method and path (a path
// template of the description, literal segments before parameters), its path
// and query parameters, and its JSON body (or a multipart body's
// payload_json) against the operation's request schema. The schema subset
// is what the description uses: $ref, type (with "null" and lists), const,
// enum, properties, required, additionalProperties, maxProperties, items,
// minItems, maxItems, uniqueItems, minLength, maxLength (in code points),
// minimum, maximum, pattern, the int32/int64 formats, oneOf (exactly one),
// anyOf and allOf.
package discordspec

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

//go:embed openapi.json
var vendored []byte

// Spec is a loaded OpenAPI description.
type Spec struct {
	paths   []pathItem
	schemas map[string]any
	mu      sync.Mutex
	regexps map[string]*regexp.Regexp
}

type pathItem struct {
	template string
	segs     []string
	item     map[string]any
}

var (
	loadOnce sync.Once
	loaded   *Spec
	loadErr  error
)

// Discord returns the vendored description, parsed once.
func Discord() (*Spec, error) {
	loadOnce.Do(func() { loaded, loadErr = Parse(vendored) })
	return loaded, loadErr
}

// Parse reads an OpenAPI 3.1 description.
func Parse(data []byte) (*Spec, error) {
	var doc struct {
		Paths      map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("discordspec: %w", err)
	}
	s := &Spec{schemas: doc.Components.Schemas, regexps: map[string]*regexp.Regexp{}}
	for t, item := range doc.Paths {
		s.paths = append(s.paths, pathItem{template: t, segs: strings.Split(strings.Trim(t, "/"), "/"), item: item})
	}
	sort.Slice(s.paths, func(i, j int) bool { return s.paths[i].template < s.paths[j].template })
	return s, nil
}

// Templates returns the description's path templates, sorted.
func (s *Spec) Templates() []string {
	out := make([]string, len(s.paths))
	for i, p := range s.paths {
		out[i] = p.template
	}
	return out
}

// Operation names the operation a request matches: its path template.
type Operation struct {
	Method, Template string
}

// Match finds the operation for method and path (without the /api/vN
// prefix): among the templates whose segments match and that have the
// method, the one with the most literal segments, earliest first.
func (s *Spec) Match(method, path string) (Operation, map[string]string, error) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	best, bestLit := -1, -1
	var params map[string]string
	pathFound := false
	for i, p := range s.paths {
		ps, lit, ok := matchSegs(p.segs, segs)
		if !ok {
			continue
		}
		pathFound = true
		if _, has := p.item[strings.ToLower(method)]; !has {
			continue
		}
		if lit > bestLit {
			best, bestLit, params = i, lit, ps
		}
	}
	if best < 0 {
		if pathFound {
			return Operation{}, nil, fmt.Errorf("%s %s: the path has no %s operation", method, path, method)
		}
		return Operation{}, nil, fmt.Errorf("%s %s: no such path", method, path)
	}
	return Operation{Method: strings.ToUpper(method), Template: s.paths[best].template}, params, nil
}

func matchSegs(tmpl, segs []string) (map[string]string, int, bool) {
	if len(tmpl) != len(segs) {
		return nil, 0, false
	}
	params := map[string]string{}
	lit := 0
	for i, t := range tmpl {
		if strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}") {
			if segs[i] == "" {
				return nil, 0, false
			}
			v, err := url.PathUnescape(segs[i])
			if err != nil {
				return nil, 0, false
			}
			params[t[1:len(t)-1]] = v
			continue
		}
		if t != segs[i] {
			return nil, 0, false
		}
		lit++
	}
	return params, lit, true
}

// Check validates one request: method and path (without the /api/vN prefix),
// its query, and body, the JSON body or a multipart body's payload_json (nil
// when there is none). It returns every problem found, joined, or nil.
func (s *Spec) Check(method, path string, query url.Values, body []byte) error {
	op, params, err := s.Match(method, path)
	if err != nil {
		return err
	}
	item := s.pathItem(op.Template)
	opObj, _ := item[strings.ToLower(method)].(map[string]any)
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }

	declared := map[string]map[string]any{}
	for _, list := range []any{item["parameters"], opObj["parameters"]} {
		ps, _ := list.([]any)
		for _, p := range ps {
			pm, _ := p.(map[string]any)
			name, _ := pm["name"].(string)
			in, _ := pm["in"].(string)
			declared[in+":"+name] = pm
		}
	}
	for name, v := range params {
		pm := declared["path:"+name]
		if pm == nil {
			continue
		}
		for _, e := range s.validate(s.paramValue(pm["schema"], v), pm["schema"], "path "+name) {
			add("%s", e)
		}
	}
	for name, vs := range query {
		pm := declared["query:"+name]
		if pm == nil {
			continue // Discord ignores query parameters it does not know
		}
		for _, v := range vs {
			for _, e := range s.validate(s.paramValue(pm["schema"], v), pm["schema"], "query "+name) {
				add("%s", e)
			}
		}
	}
	for key, pm := range declared {
		if req, _ := pm["required"].(bool); req && strings.HasPrefix(key, "query:") && !query.Has(strings.TrimPrefix(key, "query:")) {
			add("query %s: required", strings.TrimPrefix(key, "query:"))
		}
	}

	rb, _ := opObj["requestBody"].(map[string]any)
	trimmed := bytes.TrimSpace(body)
	switch {
	case rb == nil:
		// Operations without a body ignore one; discordgo sends none.
	case len(trimmed) == 0:
		if req, _ := rb["required"].(bool); req {
			add("body: required")
		}
	default:
		content, _ := rb["content"].(map[string]any)
		media, _ := content["application/json"].(map[string]any)
		var v any
		dec := json.NewDecoder(bytes.NewReader(trimmed))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			add("body: invalid JSON: %v", err)
			break
		}
		if media != nil {
			for _, e := range s.validate(v, media["schema"], "body") {
				add("%s", e)
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s %s (%s): %s", method, path, op.Template, strings.Join(errs, "; "))
}

func (s *Spec) pathItem(template string) map[string]any {
	for _, p := range s.paths {
		if p.template == template {
			return p.item
		}
	}
	return nil
}

// paramValue turns a path or query string into the JSON value its schema
// expects (a number or a boolean), leaving it a string when it is not one.
func (s *Spec) paramValue(schema any, v string) any {
	types := s.types(schema)
	switch {
	case slices.Contains(types, "integer") || slices.Contains(types, "number"):
		if _, err := strconv.ParseFloat(v, 64); err == nil {
			return json.Number(v)
		}
	case slices.Contains(types, "boolean"):
		if b, err := strconv.ParseBool(v); err == nil {
			return b
		}
	}
	return v
}

// types returns the declared types of a schema, following one $ref.
func (s *Spec) types(schema any) []string {
	m, _ := s.resolve(schema).(map[string]any)
	switch t := m["type"].(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if str, ok := x.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

func (s *Spec) resolve(schema any) any {
	for range 32 {
		m, ok := schema.(map[string]any)
		if !ok {
			return schema
		}
		ref, ok := m["$ref"].(string)
		if !ok {
			return schema
		}
		name, ok := strings.CutPrefix(ref, "#/components/schemas/")
		if !ok {
			return nil
		}
		schema = s.schemas[name]
	}
	return schema
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		str := x.String()
		if !strings.ContainsAny(str, ".eE") {
			return "integer"
		}
		if f, err := strconv.ParseFloat(str, 64); err == nil && f == math.Trunc(f) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func typeOK(declared, actual string) bool {
	return declared == actual || declared == "number" && actual == "integer"
}

// validate returns what is wrong with v against schema, each prefixed with
// where (a JSON path).
func (s *Spec) validate(v any, schema any, where string) []string {
	return s.check(v, schema, where, false)
}

// matches says whether v is valid against schema, without describing why not.
func (s *Spec) matches(v any, schema any) bool {
	return len(s.check(v, schema, "", true)) == 0
}

// check is validate; quiet stops at the first problem and describes none.
func (s *Spec) check(v any, schema any, where string, quiet bool) []string {
	sch, ok := s.resolve(schema).(map[string]any)
	if !ok {
		if b, isBool := schema.(bool); isBool && !b {
			return []string{where + ": not allowed"}
		}
		return nil
	}
	var errs []string
	add := func(format string, args ...any) {
		if quiet {
			errs = append(errs, "")
			return
		}
		errs = append(errs, where+": "+fmt.Sprintf(format, args...))
	}
	sub := func(v any, schema any, path func() string) {
		if quiet {
			if len(errs) == 0 {
				errs = append(errs, s.check(v, schema, "", true)...)
			}
			return
		}
		errs = append(errs, s.check(v, schema, path(), false)...)
	}
	actual := jsonType(v)
	if types := s.types(sch); len(types) > 0 && !slices.ContainsFunc(types, func(t string) bool { return typeOK(t, actual) }) {
		add("is %s, want %s", actual, strings.Join(types, " or "))
		return errs
	}
	if c, has := sch["const"]; has && !jsonEqual(c, v) {
		add("is %s, want %s", show(v), show(c))
	}
	if e, has := sch["enum"].([]any); has && !slices.ContainsFunc(e, func(x any) bool { return jsonEqual(x, v) }) {
		add("%s is not one of %s", show(v), show(e))
	}
	switch x := v.(type) {
	case string:
		n := utf8.RuneCountInString(x)
		if m, ok := num(sch["maxLength"]); ok && float64(n) > m {
			add("%d characters, at most %v allowed", n, m)
		}
		if m, ok := num(sch["minLength"]); ok && float64(n) < m {
			add("%d characters, at least %v needed", n, m)
		}
		if p, ok := sch["pattern"].(string); ok {
			if re := s.regexp(p); re != nil && !re.MatchString(x) {
				add("%q does not match %s", x, p)
			}
		}
	case json.Number:
		f, _ := strconv.ParseFloat(x.String(), 64)
		if m, ok := num(sch["maximum"]); ok && f > m {
			add("%s is over the maximum %v", x, m)
		}
		if m, ok := num(sch["minimum"]); ok && f < m {
			add("%s is under the minimum %v", x, m)
		}
		if fm, _ := sch["format"].(string); fm == "int32" || fm == "int64" {
			bits := 32
			if fm == "int64" {
				bits = 64
			}
			if _, err := strconv.ParseInt(x.String(), 10, bits); err != nil {
				add("%s is not an %s", x, fm)
			}
		}
	case []any:
		if m, ok := num(sch["maxItems"]); ok && float64(len(x)) > m {
			add("%d items, at most %v allowed", len(x), m)
		}
		if m, ok := num(sch["minItems"]); ok && float64(len(x)) < m {
			add("%d items, at least %v needed", len(x), m)
		}
		if u, _ := sch["uniqueItems"].(bool); u {
			for i := range x {
				for j := i + 1; j < len(x); j++ {
					if jsonEqual(x[i], x[j]) {
						add("items %d and %d are equal", i, j)
					}
				}
			}
		}
		if items, has := sch["items"]; has {
			for i, it := range x {
				sub(it, items, func() string { return fmt.Sprintf("%s.%d", where, i) })
			}
		}
	case map[string]any:
		props, _ := sch["properties"].(map[string]any)
		if req, ok := sch["required"].([]any); ok {
			for _, r := range req {
				name, _ := r.(string)
				if _, has := x[name]; !has {
					add("%s is required", name)
				}
			}
		}
		if m, ok := num(sch["maxProperties"]); ok && float64(len(x)) > m {
			add("%d properties, at most %v allowed", len(x), m)
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if ps, has := props[k]; has {
				sub(x[k], ps, func() string { return where + "." + k })
				continue
			}
			switch ap := sch["additionalProperties"].(type) {
			case bool:
				if !ap {
					add("property %s is not allowed", k)
				}
			case map[string]any:
				sub(x[k], ap, func() string { return where + "." + k })
			}
		}
	}
	if all, ok := sch["allOf"].([]any); ok {
		for _, one := range all {
			sub(v, one, func() string { return where })
		}
	}
	if anyOf, ok := sch["anyOf"].([]any); ok && !slices.ContainsFunc(anyOf, func(one any) bool { return s.matches(v, one) }) {
		if quiet {
			add("")
		} else {
			var closest []string
			for _, one := range anyOf {
				closest = closer(closest, s.validate(v, one, where), where)
			}
			add("matches none of anyOf (closest: %s)", strings.Join(closest, "; "))
		}
	}
	if oneOf, ok := sch["oneOf"].([]any); ok {
		n := 0
		for _, one := range oneOf {
			if s.matches(v, one) {
				n++
			}
		}
		switch {
		case n == 0 && quiet:
			add("")
		case n == 0:
			var closest []string
			for _, one := range oneOf {
				closest = closer(closest, s.validate(v, one, where), where)
			}
			add("matches none of oneOf (closest: %s)", strings.Join(closest, "; "))
		case n > 1:
			add("matches %d of oneOf, want exactly one", n)
		}
	}
	return errs
}

// closer picks the errors of the alternative that came closer to matching:
// one whose type fitted (its errors lie deeper than where) over one of
// another type, then the one with fewer errors, then the first.
func closer(best, e []string, where string) []string {
	if best == nil {
		return e
	}
	wrongType := func(errs []string) bool { return strings.HasPrefix(errs[0], where+": is ") }
	if wrongType(best) != wrongType(e) {
		if wrongType(best) {
			return e
		}
		return best
	}
	if len(e) < len(best) {
		return e
	}
	return best
}

func (s *Spec) regexp(p string) *regexp.Regexp {
	s.mu.Lock()
	defer s.mu.Unlock()
	re, ok := s.regexps[p]
	if !ok {
		re, _ = regexp.Compile(p)
		s.regexps[p] = re
	}
	return re
}

func num(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	return f, err == nil
}

func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		xf, err1 := strconv.ParseFloat(x.String(), 64)
		yf, err2 := strconv.ParseFloat(y.String(), 64)
		return err1 == nil && err2 == nil && xf == yf
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case nil:
		return b == nil
	}
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	return bytes.Equal(ab, bb)
}

func show(v any) string {
	b, _ := json.Marshal(v)
	if len(b) > 80 {
		return string(b[:77]) + "..."
	}
	return string(b)
}
