package tools

import (
	"encoding/json"
	"testing"
)

func TestSchema(t *testing.T) {
	type item struct {
		Name string `json:"name" required:"true" desc:"the name"`
	}
	type params struct {
		Path    string   `json:"path" required:"true" desc:"a path"`
		Count   *int     `json:"count" desc:"how many"`
		Ratio   float64  `json:"ratio"`
		Flag    bool     `json:"flag,omitempty"`
		Tags    []string `json:"tags"`
		Items   []item   `json:"items"`
		Skipped string   `json:"-"`
		NoTag   string
		hidden  string
	}
	got := string(Schema(&params{hidden: ""}))
	want := `{"type":"object","properties":{` +
		`"path":{"type":"string","description":"a path"},` +
		`"count":{"type":"integer","description":"how many"},` +
		`"ratio":{"type":"number"},` +
		`"flag":{"type":"boolean"},` +
		`"tags":{"type":"array","items":{"type":"string"}},` +
		`"items":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string","description":"the name"}},"required":["name"]}}` +
		`},"required":["path"]}`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if !json.Valid([]byte(got)) {
		t.Error("schema is not valid JSON")
	}
}

func TestSchemaPanicsOnUnsupported(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for a map field")
		}
	}()
	Schema(struct {
		M map[string]int `json:"m"`
	}{})
}

func TestDecodeArgs(t *testing.T) {
	var p readParams
	if err := decodeArgs("read", json.RawMessage(`{"path":"a","offset":"x"}`), &p); err == nil {
		t.Error("a string offset decoded without error")
	}
	if err := decodeArgs("read", nil, &p); err != nil {
		t.Errorf("empty arguments: %v", err)
	}
}
