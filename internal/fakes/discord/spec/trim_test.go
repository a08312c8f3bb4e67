package discordspec_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	discordfake "github.com/threadsmith/threadsmith/internal/fakes/discord"
	discordspec "github.com/threadsmith/threadsmith/internal/fakes/discord/spec"
)

// fakeOperations lists the fake's routes as "METHOD /path" without /api/v9.
func fakeOperations(t *testing.T) [][2]string {
	var out [][2]string
	for _, r := range discordfake.New(t).Routes() {
		method, path, _ := strings.Cut(r, " ")
		path, ok := strings.CutPrefix(path, "/api/v9")
		if !ok {
			t.Fatalf("route %q is not under /api/v9", r)
		}
		out = append(out, [2]string{method, path})
	}
	return out
}

// sameShape says whether a fake route and a spec template can name the same
// path: equal segments, or a parameter on either side.
func sameShape(a, b string) bool {
	as, bs := strings.Split(a, "/"), strings.Split(b, "/")
	if len(as) != len(bs) {
		return false
	}
	for i := range as {
		if as[i] != bs[i] && !strings.HasPrefix(as[i], "{") && !strings.HasPrefix(bs[i], "{") {
			return false
		}
	}
	return true
}

// TestTrimVendoredSpec rewrites openapi.json from Discord's full description
// when DISCORD_OPENAPI names it (specs/openapi.json of discord-api-spec):
// only the path items the fake serves, their parameters and request bodies
// (responses dropped), and the schemas those reference.
func TestTrimVendoredSpec(t *testing.T) {
	src := os.Getenv("DISCORD_OPENAPI")
	if src == "" {
		t.Skip("DISCORD_OPENAPI is not set: nothing to regenerate")
	}
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	paths := doc["paths"].(map[string]any)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	ops := fakeOperations(t)
	kept := map[string]any{}
	for tmpl, raw := range paths {
		item := raw.(map[string]any)
		out := map[string]any{}
		for _, op := range ops {
			if !sameShape(op[1], tmpl) {
				continue
			}
			m := strings.ToLower(op[0])
			o, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			slim := map[string]any{}
			for _, k := range []string{"operationId", "parameters", "requestBody"} {
				if v, ok := o[k]; ok {
					slim[k] = v
				}
			}
			out[m] = slim
		}
		if len(out) == 0 {
			continue
		}
		if p, ok := item["parameters"]; ok {
			out["parameters"] = p
		}
		kept[tmpl] = out
	}
	used := map[string]any{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				name := strings.TrimPrefix(ref, "#/components/schemas/")
				if _, seen := used[name]; !seen {
					used[name] = schemas[name]
					walk(schemas[name])
				}
			}
			for _, vv := range x {
				walk(vv)
			}
		case []any:
			for _, vv := range x {
				walk(vv)
			}
		}
	}
	walk(kept)
	out := map[string]any{
		"openapi":    doc["openapi"],
		"info":       doc["info"],
		"paths":      kept,
		"components": map[string]any{"schemas": used},
	}
	b, err := json.MarshalIndent(out, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(".", "openapi.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("kept %d of %d paths, %d of %d schemas, %d bytes", len(kept), len(paths), len(used), len(schemas), len(b))
}

// Every route the fake serves is an operation of Discord's description: the
// fake serves nothing Discord does not have.
func TestEveryFakeRouteIsInTheSpec(t *testing.T) {
	spec, err := discordspec.Discord()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range fakeOperations(t) {
		found := false
		for _, tmpl := range spec.Templates() {
			if sameShape(op[1], tmpl) {
				if _, _, err := spec.Match(op[0], strings.NewReplacer("{", "", "}", "").Replace(tmpl)); err == nil {
					found = true
				}
			}
		}
		if !found && !slices.Contains(knownMissing, op[0]+" "+op[1]) {
			t.Errorf("the fake serves %s %s, which Discord's description does not have", op[0], op[1])
		}
	}
}

// knownMissing are routes the fake serves that the description lacks.
var knownMissing = []string{}
