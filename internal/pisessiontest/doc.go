// Package pisessiontest is test support for comparing threadsmith with pi: it
// reads pi session files into transcript entries with encoding/json, for the
// conformance tests, and holds the side-by-side timing against pi's own code.
package pisessiontest
