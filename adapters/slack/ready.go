package slack

// Connected reports whether Slack can reach the bot now: its Socket Mode
// connection is up, or its Events API listener serves. The operator's
// readiness probe asks it.
func (a *Adapter) Connected() bool { return a.connected.Load() }
