package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// validateArgs checks tool-call arguments against the subset of JSON Schema that
// tool specs use: type, properties, required, items, enum. It returns a message
// the model can act on, or "" when the arguments are acceptable. Unknown schema
// keywords are ignored rather than rejected: the tool decodes defensively anyway.
func validateArgs(schema, args json.RawMessage) string {
	var v any
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return "invalid arguments: not valid JSON: " + err.Error()
	}
	if len(bytes.TrimSpace(schema)) == 0 {
		return ""
	}
	var s schemaNode
	if err := json.Unmarshal(schema, &s); err != nil {
		return "" // a broken schema is the tool's problem, not the model's
	}
	var problems []string
	s.check("", v, &problems)
	if len(problems) == 0 {
		return ""
	}
	return "invalid arguments: " + strings.Join(problems, "; ")
}

type schemaNode struct {
	Type       any                    `json:"type"` // string or []string
	Properties map[string]*schemaNode `json:"properties"`
	Required   []string               `json:"required"`
	Items      *schemaNode            `json:"items"`
	Enum       []any                  `json:"enum"`
}

func (s *schemaNode) check(path string, v any, problems *[]string) {
	if s == nil {
		return
	}
	name := path
	if name == "" {
		name = "arguments"
	}
	if types := s.types(); len(types) > 0 {
		got := jsonType(v)
		if !typeAllowed(types, got, v) {
			*problems = append(*problems, fmt.Sprintf("%s must be %s, got %s", name, strings.Join(types, " or "), got))
			return
		}
	}
	if len(s.Enum) > 0 && !enumContains(s.Enum, v) {
		*problems = append(*problems, fmt.Sprintf("%s must be one of %s", name, enumList(s.Enum)))
	}
	switch x := v.(type) {
	case map[string]any:
		for _, r := range s.Required {
			if _, ok := x[r]; !ok {
				*problems = append(*problems, fmt.Sprintf("missing required property %q", joinPath(path, r)))
			}
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if p, ok := s.Properties[k]; ok {
				p.check(joinPath(path, k), x[k], problems)
			}
		}
	case []any:
		for i, e := range x {
			s.Items.check(fmt.Sprintf("%s[%d]", name, i), e, problems)
		}
	}
}

func (s *schemaNode) types() []string {
	switch t := s.Type.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, e := range t {
			if str, ok := e.(string); ok {
				out = append(out, str)
			}
		}
		return out
	}
	return nil
}

func jsonType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

func typeAllowed(types []string, got string, v any) bool {
	for _, t := range types {
		switch {
		case t == got:
			return true
		case t == "integer" && got == "number":
			if _, err := v.(json.Number).Int64(); err == nil {
				return true
			}
		}
	}
	return false
}

func enumContains(enum []any, v any) bool {
	for _, e := range enum {
		if fmt.Sprint(e) == fmt.Sprint(v) {
			return true
		}
	}
	return false
}

func enumList(enum []any) string {
	parts := make([]string, len(enum))
	for i, e := range enum {
		parts[i] = fmt.Sprintf("%q", fmt.Sprint(e))
	}
	return strings.Join(parts, ", ")
}

func joinPath(base, k string) string {
	if base == "" {
		return k
	}
	return base + "." + k
}
