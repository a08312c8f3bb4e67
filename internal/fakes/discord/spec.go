package discordfake

import (
	"net/http"
	"regexp"

	discordspec "github.com/threadsmith/threadsmith/internal/fakes/discord/spec"
)

var apiPrefix = regexp.MustCompile(`^/api/v\d+`)

// checkSpecLocked checks a REST request against Discord's OpenAPI
// description. A request the description rejects fails the test (unless
// WithSpecViolationsAllowed) and is recorded; the error says why.
func (s *Server) checkSpecLocked(r *http.Request, body []byte) error {
	spec, err := discordspec.Discord()
	if err != nil {
		s.t.Errorf("discordfake: loading Discord's OpenAPI description: %v", err)
		return nil
	}
	path := apiPrefix.ReplaceAllString(r.URL.EscapedPath(), "")
	if err := spec.Check(r.Method, path, r.URL.Query(), body); err != nil {
		s.specViolations = append(s.specViolations, err.Error())
		if !s.cfg.specViolationsAllowed {
			s.t.Errorf("discordfake: a request Discord's OpenAPI description rejects: %v", err)
		}
		return err
	}
	return nil
}

// SpecViolations returns why each request Discord's OpenAPI description
// rejects was rejected, in order.
func (s *Server) SpecViolations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.specViolations...)
}
