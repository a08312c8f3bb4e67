package llm

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Route is how one configured model name is served.
type Route struct {
	// Model is the provider's client; routes of one endpoint share it.
	Model Model
	// ID is the model's id at the provider (Request.Model as sent).
	ID string
	// Reasoning is the default Request.Reasoning for this model.
	Reasoning string
	// Price prices the replies' usage into Usage.Cost; zero leaves Cost nil.
	Price Price
}

// Router is a Model that serves each configured model name (Request.Model)
// from its own provider and endpoint, so a session can switch between
// providers with nothing but a name. It is safe for concurrent use.
type Router struct {
	routes map[string]Route
}

var _ Model = (*Router)(nil)

// NewRouter returns a router over routes, keyed by the names sessions use.
func NewRouter(routes map[string]Route) *Router {
	return &Router{routes: routes}
}

// Stream implements Model: it sends the request to the name's provider under
// the provider's model id, and prices the reply.
func (r *Router) Stream(ctx context.Context, req Request, fn StreamFunc) (Message, error) {
	route, ok := r.routes[req.Model]
	if !ok {
		names := make([]string, 0, len(r.routes))
		for n := range r.routes {
			names = append(names, n)
		}
		slices.Sort(names)
		err := &Error{Kind: ErrorProvider, Code: "unknown_model",
			Message: fmt.Sprintf("model %q is not configured (known: %s)", req.Model, strings.Join(names, ", "))}
		return Message{Role: RoleAssistant, Model: req.Model, StopReason: StopReasonError, ErrorMessage: err.Error(), ErrorInfo: err}, err
	}
	if route.ID != "" {
		req.Model = route.ID
	}
	if req.Reasoning == "" {
		req.Reasoning = route.Reasoning
	}
	m, err := route.Model.Stream(ctx, req, fn)
	if m.Usage != nil && !route.Price.IsZero() {
		u := *m.Usage
		c := route.Price.Cost(u)
		u.Cost = &c
		m.Usage = &u
	}
	return m, err
}
