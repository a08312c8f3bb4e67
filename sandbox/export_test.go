package sandbox

// WithoutSeccomp returns a sandbox like s whose commands run without the
// seccomp filter, so that tests can see what holds beneath it.
func WithoutSeccomp(s *Sandbox) *Sandbox {
	c := *s
	c.noSeccomp = true
	return &c
}
