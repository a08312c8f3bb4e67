package discord

// Connected reports whether the gateway session is up now (READY or RESUMED
// and no disconnect since): the operator's readiness probe asks it.
func (a *Adapter) Connected() bool { return a.connected.Load() }
