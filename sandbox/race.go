//go:build race

package sandbox

// initEnv is the whole environment of the sandbox's init (the bot's own
// binary re-executed). A binary built with -race sleeps a second at exit
// (GORACE's atexit_sleep_ms, default 1000), which in race-enabled tests made
// every sandboxed command, and every sandbox's start-up probe, a second
// longer.
var initEnv = []string{"GORACE=atexit_sleep_ms=0"}
