package sandbox

// WithoutSeccomp returns a sandbox like s whose commands run without the
// seccomp filter, so that tests can see what holds beneath it.
func WithoutSeccomp(s *Sandbox) *Sandbox {
	c := *s
	c.noSeccomp = true
	return &c
}

// Unpooled returns a sandbox like s that starts a new init for every
// command: what the bot holds at the moment of the call (its groups, its
// keyring, its open descriptors) is then what the init inherits.
func Unpooled(s *Sandbox) *Sandbox {
	c := *s
	c.unpooled = true
	return &c
}
