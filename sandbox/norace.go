//go:build !race

package sandbox

// initEnv is the whole environment of the sandbox's init: nothing of the
// bot's, which is where its secrets are.
var initEnv = []string{}
