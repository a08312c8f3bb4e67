package storage

import "time"

// DecisionKind is what a decision in a thread was.
type DecisionKind string

const (
	// DecisionPlan: the agent offered a plan for approval; UserID is its
	// requester and Detail the request.
	DecisionPlan DecisionKind = "plan"
	// DecisionApprove: someone approved the plan waiting; the work starts.
	DecisionApprove DecisionKind = "approve"
	// DecisionRevise: someone asked for the plan to be made again; Detail
	// is their feedback when it came with the decision.
	DecisionRevise DecisionKind = "revise"
	// DecisionCancel: someone cancelled the plan waiting.
	DecisionCancel DecisionKind = "cancel"
	// DecisionPush: someone approved the push of work that waited for it;
	// Detail is the branch.
	DecisionPush DecisionKind = "push"
)

// Decision is one decision a person (or the agent, for DecisionPlan) made in
// a thread: the session record's account of who approved, revised,
// cancelled or pushed, and when.
type Decision struct {
	ID        int64
	ThreadID  int64
	SessionID string // the public id of the session it concerns; "" for none
	Kind      DecisionKind
	UserID    string // the chat user id of who decided
	UserName  string // their display name then
	Detail    string
	At        time.Time
}

// ValidDecisionKind says whether k is one of the kinds above.
func ValidDecisionKind(k DecisionKind) bool {
	switch k {
	case DecisionPlan, DecisionApprove, DecisionRevise, DecisionCancel, DecisionPush:
		return true
	}
	return false
}
