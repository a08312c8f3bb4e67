package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A size in GB (or KB, MB, TB) is refused, naming its line and the two
// spellings that are not ambiguous; GiB is 2^30 exactly.
func TestAmbiguousSizesAreRefused(t *testing.T) {
	t.Parallel()
	_, err := parseString("sandbox:\n  memory: 2GB\n", nil)
	wantErr(t, err, "sandbox.memory", `"2GB" is ambiguous`, "write 2GiB", "(line 2)")
	_, err = parseString("sandbox:\n  disk: 1.5 tb\n", nil)
	wantErr(t, err, "sandbox.disk", "write 1.5TiB")
	c := mustParse(t, "sandbox:\n  memory: 2GiB\n", nil)
	if c.Sandbox.Memory != 2<<30 {
		t.Errorf("2GiB = %d bytes, want %d", c.Sandbox.Memory, 2<<30)
	}
}

// A key known elsewhere in the file's structure is pointed home.
func TestAKeyAtTheWrongLevelIsPointedHome(t *testing.T) {
	t.Parallel()
	_, err := parseString("model: gpt-5\n", nil)
	wantErr(t, err, "model", "unknown key (line 1)", "`model` belongs under `llm:`")
	_, err = parseString("workspace:\n  url: https://example.com/x.git\n", nil)
	wantErr(t, err, "workspace.url", "belongs under an item of `workspace.repos:`")
	// A typo still gets its did-you-mean, not a home.
	_, err = parseString("llm:\n  modle: x\n", nil)
	if e := wantErr(t, err, "llm.modle", `did you mean "model"?`); strings.Contains(e.Reason, "belongs") {
		t.Errorf("a typo was pointed elsewhere: %s", e.Reason)
	}
}

// Load's validation problems name the line of their key, or of the section
// a missing key belongs in; a relative data_dir is the config file's
// folder's; the API key's problem says what is true of the environment.
func TestLoadNamesLinesResolvesDataDirAndTellsTheAPIKeyTruth(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	src := "data_dir: ./state\nslack:\n  enabled: false\nllm:\n  model: gpt-5\n  context_window: 10\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, envMap(nil))
	wantErr(t, err, "llm.context_window", "(line 6)")
	wantErr(t, err, "llm.api_key", "(llm: at line 4)", "write api_key:")
	_, err = Load(path, envMap(map[string]string{"OPENAI_API_KEY": "sk-set"}))
	e := wantErr(t, err, "llm.api_key", "OPENAI_API_KEY is set, but this file does not read it", "api_key: ${OPENAI_API_KEY}")
	if strings.Contains(e.Reason, "sk-set") {
		t.Errorf("the key's value is shown: %s", e.Reason)
	}

	src = "data_dir: ./state\nslack:\n  enabled: false\nllm:\n  api_key: sk-x\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "state"); c.DataDir != want {
		t.Errorf("data_dir = %q, want %q (beside the config file)", c.DataDir, want)
	}
}
