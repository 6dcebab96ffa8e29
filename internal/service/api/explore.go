package api

import (
	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/step"
	"github.com/lockmarket/lockmarket/internal/explore/view"
)

// ExploreRequest is the body of POST /api/explore/sessions: a recipe of
// the gallery, flawed or fixed (Fixed, or Fencing: the fix of 6 and 11 is
// the fenced write), or one of the market's strategies, with or without a
// fenced write.
type ExploreRequest struct {
	Recipe   *string `json:"recipe"`
	Strategy *string `json:"strategy"`
	Fencing  bool    `json:"fencing"`
	Fixed    bool    `json:"fixed"`
	// Lua is a lock of one's own, as Lua scripts, instead of a recipe or
	// a strategy.
	Lua *LuaLock `json:"lua"`
	// Clients (2 or 3; 0: 3) and Faults (the fault kinds that may strike:
	// pause-short, pause-long, pause-forever, crash; "pause" for the three
	// pauses; nil: all four; empty: none) are the bounds a pasted lock is
	// searched within. A recipe and a strategy are searched within their
	// lesson's.
	Clients int      `json:"clients"`
	Faults  []string `json:"faults"`
}

// LuaLock is a lock written as Lua scripts in the explorer's convention
// (KEYS[1] the lock key, ARGV[1] the owner's token, ARGV[2] the lease in
// ms; acquire and extend answer 1 or 0, release 1 when it deleted the
// lock): acquire and release, extend optional; or a read-write lock's
// four scripts.
type LuaLock struct {
	Acquire      string `json:"acquire"`
	Release      string `json:"release"`
	Extend       string `json:"extend"`
	ReadAcquire  string `json:"read_acquire"`
	ReadRelease  string `json:"read_release"`
	WriteAcquire string `json:"write_acquire"`
	WriteRelease string `json:"write_release"`
}

// ExploreSession is the answer of POST /api/explore/sessions: the new
// session's ID and its first state.
type ExploreSession struct {
	ID    string       `json:"id"`
	State ExploreState `json:"state"`
}

// ExploreState is an explorer session's state, the answer of its other
// routes: the current frame's fields at the top, every frame of the
// history in Frames, and the session's search for a counterexample, if
// one was asked for since the last step.
type ExploreState struct {
	// Target and About say what is explored; Model the bounds of a
	// search, in words.
	Target string `json:"target"`
	About  string `json:"about"`
	Model  string `json:"model"`
	*step.Snapshot
	Resource string         `json:"resource"`
	Frames   []ExploreFrame `json:"frames"`
	Find     *FindStatus    `json:"find"`
	// Judged is how the target is judged: each property, checked as
	// something the lock promises, checked as something it does not
	// promise, or not checked, and why.
	Judged []Judged `json:"judged"`
}

// How a property is judged (Judged.Judged), and how a search left it
// (PropertyVerdict.Verdict).
const (
	// Promised: the lock is expected to keep it; broken, it is a bug.
	Promised = "promised"
	// NotPromised: checked, but a lock of this kind cannot keep it (the
	// resource of a lease lock without fencing): broken, it is shown as
	// what the lock does not promise, not as a bug of the lock.
	NotPromised = "not_promised"
	// NotChecked: the explorer does not check it for this target.
	NotChecked = "not_checked"

	// Holds: no schedule within the bounds broke it (the search went
	// through every one).
	Holds = "holds"
	// Broken: a schedule broke it (in the steps searched from, or found).
	Broken = "broken"
	// Open: not settled (the search stopped first: at another property
	// broken, at its budget, or it proved nothing).
	Open = "open"
)

// Judged is how one property is judged for a session's target: Judged
// is Promised, NotPromised or NotChecked, and Why says why in words.
type Judged struct {
	Property string `json:"property"`
	Judged   string `json:"judged"`
	Why      string `json:"why"`
}

// PropertyVerdict is what a search found of one property: Verdict is
// Holds, Broken, Open, NotPromised (broken, as the lock does not promise
// it) or NotChecked; Note says on what grounds.
type PropertyVerdict struct {
	Property string `json:"property"`
	Judged   string `json:"judged"`
	Verdict  string `json:"verdict"`
	Note     string `json:"note"`
}

// ExploreFrame is a session's state after some steps: where the slider of
// the page's history shows it.
type ExploreFrame struct {
	ClockMS int64         `json:"clock_ms"`
	Holders []step.Holder `json:"holders"`
	// Enabled is the actions that may come next from this frame.
	Enabled    []action.Action    `json:"enabled"`
	Violations []result.Violation `json:"violations"`
	Complete   bool               `json:"complete"`
	// Views is each client as it stands: what it read, the token it
	// holds, whether it believes it holds the lock, its lease.
	Views []view.ClientView `json:"views"`
	// Chains is the causal chain of each violation.
	Chains []view.Chain `json:"chains"`
	// Resource is the protected resource (the shared counter the
	// clients' critical sections increment, or the market's listing) as
	// it stands, "" before the first write.
	Resource string `json:"resource"`
}

// The states a search ends in beside StateCancelled and StateFailed; it
// is StateRunning until then.
const (
	FindFound = "found" // a counterexample
	FindNone  = "none"  // none within the search
)

// FindStatus is a session's search for a counterexample: running, or
// ended (found one, found none, cancelled, or failed with Error).
type FindStatus struct {
	State string `json:"state"`
	// FromStep is the step it searches from: the continuations of the
	// first FromStep actions.
	FromStep int `json:"from_step"`
	// Waiting is set while it waits for a CPU (the searches that run at
	// once are bounded), QueuePosition then its place among the waiting
	// searches (1: next), WaitEstimateMS about how long until it runs (the
	// searches before it taking as long as the last ones took) and
	// WaitMostMS the longest it may wait (every search before it taking
	// the most any search may).
	Waiting        bool  `json:"waiting"`
	QueuePosition  int   `json:"queue_position,omitempty"`
	WaitEstimateMS int64 `json:"wait_estimate_ms,omitempty"`
	WaitMostMS     int64 `json:"wait_most_ms,omitempty"`
	// Following is how many sessions follow this search: the sessions
	// that ask for the same search (the same target and model, the same
	// steps searched from) share one. Kept says the answer was kept
	// from a search that ended before this session asked.
	Following int  `json:"following"`
	Kept      bool `json:"kept,omitempty"`
	// Schedules is how many complete schedules it ran so far (counted
	// every few seconds while it runs); ElapsedMS how long it has
	// searched, BudgetMS how long it may (which grows with the addresses
	// whose sessions follow it).
	Schedules int     `json:"schedules"`
	ElapsedMS float64 `json:"elapsed_ms"`
	BudgetMS  int64   `json:"budget_ms"`
	Error     string  `json:"error,omitempty"`
	// Note says why nothing was found when the search was cut short or
	// had nothing left to look for.
	Note string `json:"note,omitempty"`
	// Result is what it found, once it has ended (but not when cancelled
	// or when there was nothing to look for): the explorer's result, as
	// the command line prints it, whose counterexample starts with the
	// FromStep steps searched from.
	Result *result.Result `json:"result,omitempty"`
	// Unpromised is the search for what the lock does not promise (a
	// lost update of a lease lock without fencing), run when nothing it
	// promises broke: its counterexample shows it.
	Unpromised *result.Result `json:"unpromised,omitempty"`
	// Properties is the verdict on every property, in the order of
	// result.Properties(): what was checked and what was not.
	Properties []PropertyVerdict `json:"properties,omitempty"`
}
