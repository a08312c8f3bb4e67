package msgjson_test

import (
	"testing"

	"github.com/threadsmith/threadsmith/agent/tools"
	"github.com/threadsmith/threadsmith/internal/msgjson"
)

// The intern table is a switch for speed, so it cannot read the tool
// registry: every built-in tool's name must be in it all the same, or a
// renamed or added tool costs an allocation per call in every loaded session.
func TestInternTableHasEveryBuiltinToolName(t *testing.T) {
	for _, name := range tools.Names() {
		if got := msgjson.InternedValue([]byte(name)); got != name {
			t.Errorf("tool %q is not interned (got %q): add it to internedValue", name, got)
		}
	}
}
