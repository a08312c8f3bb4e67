package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// Schema returns the JSON Schema of the arguments object described by the struct
// type of params (a struct value or pointer). It reads three tags per field:
//
//	json:"name"      the property name (fields without one, or "-", are skipped)
//	desc:"…"         the property's description
//	required:"true"  the property must be present
//
// Go types map to JSON types: string → string, bool → boolean, integers →
// integer, floats → number, slices → array (with items), structs → object;
// pointers stand for their element and mark a property the model may omit.
// It panics on a type it cannot express: schemas are built once, at start.
func Schema(params any) json.RawMessage {
	t := reflect.TypeOf(params)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("tools.Schema: %s is not a struct", t))
	}
	b, err := json.Marshal(schemaFor(t))
	if err != nil {
		panic(err)
	}
	return b
}

// schemaNode is the subset of JSON Schema the tools use. Field order gives a
// stable, readable encoding.
type schemaNode struct {
	Type        string        `json:"type"`
	Description string        `json:"description,omitempty"`
	Properties  *orderedProps `json:"properties,omitempty"`
	Required    []string      `json:"required,omitempty"`
	Items       *schemaNode   `json:"items,omitempty"`
}

// orderedProps encodes properties in field order rather than map order, so the
// model reads them in the order they were written.
type orderedProps struct {
	names []string
	nodes []*schemaNode
}

func (p *orderedProps) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, name := range p.names {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(name)
		v, err := json.Marshal(p.nodes[i])
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func schemaFor(t reflect.Type) *schemaNode {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return &schemaNode{Type: "string"}
	case reflect.Bool:
		return &schemaNode{Type: "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &schemaNode{Type: "integer"}
	case reflect.Float32, reflect.Float64:
		return &schemaNode{Type: "number"}
	case reflect.Slice, reflect.Array:
		return &schemaNode{Type: "array", Items: schemaFor(t.Elem())}
	case reflect.Struct:
		n := &schemaNode{Type: "object", Properties: &orderedProps{}}
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			p := schemaFor(f.Type)
			p.Description = f.Tag.Get("desc")
			n.Properties.names = append(n.Properties.names, name)
			n.Properties.nodes = append(n.Properties.nodes, p)
			if f.Tag.Get("required") == "true" {
				n.Required = append(n.Required, name)
			}
		}
		return n
	}
	panic(fmt.Sprintf("tools.Schema: cannot express %s", t))
}

// decodeArgs decodes a call's arguments into params. The agent loop has already
// checked them against the schema, but a tool must not trust that: a decoding
// failure is the model's mistake and becomes a message it can act on.
func decodeArgs(tool string, args json.RawMessage, params any) error {
	if len(bytes.TrimSpace(args)) == 0 {
		args = []byte("{}")
	}
	if err := json.Unmarshal(args, params); err != nil {
		return fmt.Errorf("invalid arguments for %s: %v", tool, err)
	}
	return nil
}
