package config

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Load reads, parses and validates the configuration file at path: what the
// bot does at start. env looks up environment variables; nil means
// os.LookupEnv. On error the Config is the zero value and the error is Errors
// (one problem per line); a YAML syntax error names the file and the line.
func Load(path string, env func(string) (string, bool)) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, Errors{{Reason: fmt.Sprintf("cannot read the configuration file: %v", err)}}
	}
	defer f.Close()
	c, lines, err := parse(f, path, env)
	if err != nil {
		return Config{}, err
	}
	c.DataDir = resolveFrom(path, c.DataDir)
	if err := c.Validate(); err != nil {
		return Config{}, withLines(err, path, lines, env)
	}
	return c, nil
}

// withLines adds to each of Validate's problems the line of its key in
// the file, or of the nearest enclosing key there (a required key that is
// absent: its section's line), when the problem does not name one yet.
func withLines(err error, file string, lines map[string]int, env func(string) (string, bool)) error {
	es := AsErrors(err)
	out := make(Errors, 0, len(es))
	for _, e := range es {
		e := *e
		if e.Key == "llm.api_key" {
			e.Reason = apiKeyReason(e.Reason, env)
		}
		if e.Key != "" && !strings.Contains(e.Reason, "(line ") {
			for k := e.Key; k != ""; k = parentKey(k) {
				if n, ok := lines[k]; ok {
					where := fmt.Sprintf("line %d", n)
					if k != e.Key {
						where = fmt.Sprintf("%s: at line %d", k, n)
					}
					e.Reason += " (" + where + ")"
					break
				}
			}
		}
		out = append(out, &e)
	}
	return out
}

// parentKey is the key that encloses key ("llm" for "llm.api_key",
// "workspace.repos" for "workspace.repos[1]"), "" at the top.
func parentKey(key string) string {
	if i := strings.LastIndexAny(key, ".["); i > 0 {
		return key[:i]
	}
	return ""
}

// apiKeyReason says how to give a config file the API key: the variable
// of the provider's key is only read where the file says ${VAR}.
func apiKeyReason(reason string, env func(string) (string, bool)) string {
	for _, name := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY"} {
		if !strings.Contains(reason, name) {
			continue
		}
		if v, ok := env(name); ok && v != "" {
			return fmt.Sprintf("required: %s is set, but this file does not read it: write api_key: ${%s} under llm: (only a loopback llm.base_url, such as a local model server, may go without)", name, name)
		}
	}
	return reason
}

// resolveFrom resolves a relative path of the file at configPath against
// that file's folder, so the bot finds the same folder from any working
// directory (a service's is often /).
func resolveFrom(configPath, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(configPath), p)
}

// Parse reads a configuration from r over Default() and expands environment
// references, but does not validate it (call Validate). env looks up
// environment variables; nil means os.LookupEnv. An empty input gives Default().
// Errors are Errors: unknown keys, values of the wrong type, duplicate keys and
// malformed ${...} references, each naming its key and line, or a YAML syntax
// error naming its line.
func Parse(r io.Reader, env func(string) (string, bool)) (Config, error) {
	c, _, err := parse(r, "", env)
	return c, err
}

// parse is Parse, also returning the line of each key present in the file.
func parse(r io.Reader, file string, env func(string) (string, bool)) (Config, map[string]int, error) {
	if env == nil {
		env = os.LookupEnv
	}
	dec := yaml.NewDecoder(r)
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return Default(), nil, nil
		}
		return Config{}, nil, Errors{syntaxError(file, err)}
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		return Config{}, nil, Errors{{Reason: location(file, extra.Line) + "only one YAML document is allowed"}}
	case !errors.Is(err, io.EOF):
		return Config{}, nil, Errors{syntaxError(file, err)}
	}

	c := Default()
	root := doc.Content[0] // Decode never yields an empty document node
	if isNull(root) {
		return c, nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return Config{}, nil, Errors{{Reason: location(file, root.Line) + "the configuration must be a mapping of keys (such as data_dir: ./data)"}}
	}
	w := walker{env: env, done: make(map[*yaml.Node]bool), lines: make(map[string]int)}
	w.walk(root, reflect.TypeFor[Config](), "")
	if len(w.errs.errs) > 0 {
		return Config{}, nil, w.errs.errs
	}
	// The walk has expanded the values and checked every key and type, so this
	// cannot fail on anything but a decoder limit (e.g. excessive aliasing).
	if err := root.Decode(&c); err != nil {
		return Config{}, nil, Errors{{Reason: location(file, 0) + strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	c.unresolved = w.unresolved
	c.fillDerived()
	return c, w.lines, nil
}

// fillDerived applies the defaults that depend on other keys or live inside
// list items, and makes empty lists and maps nil, so that a Config has one
// canonical form whatever the file's spelling ([] or absent).
func (c *Config) fillDerived() {
	for i := range c.Workspace.Repos {
		if c.Workspace.Repos[i].DefaultBranch == "" {
			c.Workspace.Repos[i].DefaultBranch = defaultBranch
		}
		if c.Workspace.Repos[i].PullRequests == "" {
			c.Workspace.Repos[i].PullRequests = PullRequestsDraft
		}
		if c.Workspace.Repos[i].Push == "" {
			c.Workspace.Repos[i].Push = PushAuto
		}
	}
	if c.Workspace.DefaultRepo == "" && len(c.Workspace.Repos) == 1 {
		// One repository is the default one; with several, the file must say.
		c.Workspace.DefaultRepo = c.Workspace.Repos[0].Name
	}
	for i := range c.MCP.Servers {
		if c.MCP.Servers[i].Timeout == 0 {
			c.MCP.Servers[i].Timeout = DefaultMCPTimeout
		}
	}
	if c.LLM.Provider == "" {
		c.LLM.Provider = ProviderOpenAI
	}
	if c.LLM.Provider == ProviderAnthropic && c.LLM.BaseURL == DefaultOpenAIBaseURL {
		// The default base_url is OpenAI's; an Anthropic main model wants its own.
		c.LLM.BaseURL = DefaultAnthropicBaseURL
	}
	for i := range c.LLM.Models {
		m := &c.LLM.Models[i]
		if m.Provider == "" {
			m.Provider = c.LLM.Provider
		}
		if m.BaseURL == "" {
			m.BaseURL = m.Provider.DefaultBaseURL()
			if m.Provider == c.LLM.Provider {
				m.BaseURL = c.LLM.BaseURL
			}
		}
		// llm.api_key belongs to llm.base_url: another endpoint never gets it.
		if m.APIKey == "" && m.Provider == c.LLM.Provider && m.BaseURL == c.LLM.BaseURL {
			m.APIKey = c.LLM.APIKey
		}
		if m.ID == "" {
			m.ID = m.Name
		}
		if m.ContextWindow == 0 {
			m.ContextWindow = c.LLM.ContextWindow
		}
		if m.MaxOutputTokens == 0 {
			m.MaxOutputTokens = c.LLM.MaxOutputTokens
		}
	}
	nilEmpty(reflect.ValueOf(c).Elem())
}

func nilEmpty(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				nilEmpty(v.Field(i))
			}
		}
	case reflect.Slice:
		if v.Len() == 0 {
			v.SetZero()
			return
		}
		for i := range v.Len() {
			nilEmpty(v.Index(i))
		}
	case reflect.Map:
		if v.Len() == 0 {
			v.SetZero()
		}
	}
}

var yamlLine = regexp.MustCompile(`^line (\d+): `)

// syntaxError turns a yaml.v3 parse error into "file:line: message".
func syntaxError(file string, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	// yaml.v3 omits the line when the problem's position is on the first line
	// (it treats line index 0 as unknown).
	line := "1"
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line = m[1]
		msg = msg[len(m[0]):]
	}
	where := "line " + line + ": "
	if file != "" {
		where = file + ":" + line + ": "
	}
	return &Error{Reason: where + "invalid YAML: " + msg}
}

// location is the "file:line: " prefix of a keyless problem.
func location(file string, line int) string {
	switch {
	case file != "" && line > 0:
		return fmt.Sprintf("%s:%d: ", file, line)
	case file != "":
		return file + ": "
	case line > 0:
		return fmt.Sprintf("line %d: ", line)
	}
	return ""
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// walker visits the YAML tree alongside the Config type: it rejects keys the
// type does not have, checks each scalar against its field's type (so the
// error can name the key, which yaml.v3's errors do not), and expands
// environment references in scalar values, recording unset ones by key.
type walker struct {
	env        func(string) (string, bool)
	errs       collector
	unresolved []unresolvedVar
	// done marks expanded scalars: an anchored value reached again through an
	// alias must not be expanded twice.
	done map[*yaml.Node]bool
	// lines is the line of each key path walked.
	lines map[string]int
	// visits counts the values walked. Aliases and merge keys let a few
	// hundred bytes stand for billions of values (each level of
	// "<<: [*a, *a, …]" multiplies them), so the walk stops at maxVisits.
	visits int
}

// maxVisits bounds the values a configuration may stand for once aliases and
// merge keys are expanded: far above any real file (a few hundred), low
// enough that a hostile one is refused in milliseconds.
const maxVisits = 50_000

var (
	durationType = reflect.TypeFor[time.Duration]()
	byteSizeType = reflect.TypeFor[ByteSize]()
	daysType     = reflect.TypeFor[Days]()
	reposType    = reflect.TypeFor[ChannelRepos]()
)

func (w *walker) walk(n *yaml.Node, t reflect.Type, key string) {
	if w.visits++; w.visits > maxVisits {
		if w.visits == maxVisits+1 {
			w.errs.add(key, fmt.Sprintf("the file stands for more than %d values once its aliases and merge keys are expanded (line %d); write the values out instead", maxVisits, n.Line))
		}
		return
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if isNull(n) {
		return // present but empty: the key keeps its default
	}
	switch {
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			w.errs.add(key, fmt.Sprintf("must be a mapping of keys, not %s (line %d)", kindName(n), n.Line))
			return
		}
		w.mapping(n, t, key, func(k string) (reflect.Type, string) {
			f, ok := fieldByTag(t, k)
			if !ok {
				return nil, suggest(k, fieldTags(t))
			}
			return f.Type, ""
		})
	case t.Kind() == reflect.Map:
		if n.Kind != yaml.MappingNode {
			w.errs.add(key, fmt.Sprintf("must be a mapping, not %s (line %d)", kindName(n), n.Line))
			return
		}
		w.mapping(n, t, key, func(string) (reflect.Type, string) { return t.Elem(), "" })
	case t == reposType && n.Kind == yaml.ScalarNode:
		w.scalar(n, t.Elem(), key) // one repository: a list of one
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			w.errs.add(key, fmt.Sprintf("must be a list, not %s (line %d)", kindName(n), n.Line))
			return
		}
		for i, item := range n.Content {
			w.walk(item, t.Elem(), fmt.Sprintf("%s[%d]", key, i))
		}
	default:
		if n.Kind != yaml.ScalarNode {
			w.errs.add(key, fmt.Sprintf("must be a single value, not %s (line %d)", kindName(n), n.Line))
			return
		}
		w.scalar(n, t, key)
	}
}

// mapping walks the pairs of a mapping node; field resolves a key to the type
// of its value, or nil and a suggestion when the key is unknown.
func (w *walker) mapping(n *yaml.Node, t reflect.Type, key string, field func(string) (reflect.Type, string)) {
	lines := make(map[string]int)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			w.errs.add(key, fmt.Sprintf("keys must be plain names, not %s (line %d)", kindName(k), k.Line))
			continue
		}
		if k.Tag == "!!merge" { // "<<: *anchor" merges another mapping into this one
			w.merge(v, t, key)
			continue
		}
		path := joinKey(key, k.Value)
		if k.Value == "" {
			w.errs.add(path, fmt.Sprintf("empty key (line %d)", k.Line))
			continue
		}
		if first, dup := lines[k.Value]; dup {
			w.errs.add(path, fmt.Sprintf("defined twice (lines %d and %d)", first, k.Line))
			continue
		}
		lines[k.Value] = k.Line
		w.lines[path] = k.Line
		ft, hint := field(k.Value)
		if ft == nil {
			reason := fmt.Sprintf("unknown key (line %d)", k.Line)
			if hint != "" {
				reason += fmt.Sprintf("; did you mean %q?", hint)
			} else if homes := keyHomes(k.Value, key); len(homes) > 0 && t.Kind() == reflect.Struct {
				reason += fmt.Sprintf("; `%s` belongs under %s", k.Value, strings.Join(homes, " or "))
			}
			w.errs.add(path, reason)
			continue
		}
		w.walk(v, ft, path)
	}
}

func (w *walker) merge(v *yaml.Node, t reflect.Type, key string) {
	if v.Kind == yaml.SequenceNode {
		for _, item := range v.Content {
			w.walk(item, t, key)
		}
		return
	}
	w.walk(v, t, key)
}

func (w *walker) scalar(n *yaml.Node, t reflect.Type, key string) {
	fromEnv := false
	if !w.done[n] {
		w.done[n] = true
		x, err := expand(n.Value, w.env)
		if err != nil {
			w.errs.add(key, fmt.Sprintf("%v (line %d)", err, n.Line))
			return
		}
		fromEnv = x.fromEnv
		if x.changed {
			setExpanded(n, x)
			for _, name := range x.missing {
				w.unresolved = append(w.unresolved, unresolvedVar{key: key, name: name})
			}
		}
	}
	if err := n.Decode(reflect.New(t).Interface()); err != nil {
		if errors.Is(err, errAmbiguousSize) && !fromEnv {
			w.errs.add(key, fmt.Sprintf("%v (line %d)", err, n.Line))
			return
		}
		want := "a valid value"
		switch {
		case t == durationType:
			want = "a duration such as 30s, 10m or 168h"
		case t == byteSizeType:
			want = "a size such as 2GiB or 512MiB"
		case t == daysType:
			want = "a number of days such as 90d, or a duration such as 720h"
		case t.Kind() == reflect.Bool:
			want = "true or false"
		case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
			want = "a whole number"
		case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
			want = "a number"
		}
		got := ""
		if !fromEnv { // a value from the environment may be a secret: never echo it
			got = fmt.Sprintf(", not %q", n.Value)
		}
		w.errs.add(key, fmt.Sprintf("must be %s%s (line %d)", want, got, n.Line))
	}
}

// setExpanded stores an expanded value in its node. A plain scalar is
// re-resolved as if the expanded text had been written in the file, so that
// ${PORT} can fill an integer key, except that it never becomes null (a secret
// "null" or "~" stays a string). A value with an unset variable becomes null,
// so the key keeps its default and Validate reports the variable.
func setExpanded(n *yaml.Node, x expansion) {
	n.Value = x.value
	if len(x.missing) > 0 {
		n.Value, n.Tag, n.Style = "", "", 0
		return
	}
	if n.Style != 0 {
		return // quoted, block or explicitly tagged: its tag stands
	}
	n.Tag = ""
	if n.ShortTag() == "!!null" {
		n.Tag = "!!str"
	}
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return "a single value"
}

func joinKey(parent, k string) string {
	if parent == "" {
		return k
	}
	return parent + "." + k
}

// fieldTags lists the YAML keys of a struct type, in declaration order.
func fieldTags(t reflect.Type) []string {
	var tags []string
	for f := range t.Fields() {
		if tag := yamlName(f); tag != "" {
			tags = append(tags, tag)
		}
	}
	return tags
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		if yamlName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// suggest returns the known key closest to an unknown one, if it is close
// enough to be a typo.
func suggest(k string, known []string) string {
	k = strings.ToLower(k)
	best, bestDist := "", -1
	for _, cand := range known {
		d := editDistance(k, cand)
		close := d <= 2 || (commonPrefix(k, cand) >= 4 && 2*d <= max(len(k), len(cand)))
		if close && (bestDist < 0 || d < bestDist) {
			best, bestDist = cand, d
		}
	}
	return best
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// keyHomes lists where a key unknown at path is known: "`llm:`" for a
// model written at the top, "an item of `workspace.repos:`" for a url
// written in workspace; three at most.
func keyHomes(name, path string) []string {
	var homes []string
	var visit func(t reflect.Type, at string, item bool, depth int)
	visit = func(t reflect.Type, at string, item bool, depth int) {
		for t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Pointer {
			item = item || t.Kind() != reflect.Pointer
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || depth > 4 {
			return
		}
		if _, ok := fieldByTag(t, name); ok && at != "" && at != path {
			if item {
				homes = append(homes, "an item of `"+at+":`")
			} else {
				homes = append(homes, "`"+at+":`")
			}
		}
		for f := range t.Fields() {
			if tag := yamlName(f); tag != "" && f.Type != reposType {
				visit(f.Type, joinKey(at, tag), false, depth+1)
			}
		}
	}
	visit(reflect.TypeFor[Config](), "", false, 0)
	if len(homes) > 3 {
		homes = homes[:3]
	}
	return homes
}
