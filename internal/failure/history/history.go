// Package history records what clients of a market asked for and what they
// were told (the invoke and complete time of every List and Purchase, and
// its outcome: ok, failed, or unknown), and checks such a history, together
// with the final state read from Redis, independently of the market code
// that produced it:
//
//   - per listing, with github.com/anishathalye/porcupine, that the
//     operations on each item are linearizable against a one-item model
//     (in an inventory, or listed by a seller at a price), ending in the
//     state read at the end: no listing sold twice, no acknowledged sale
//     lost, no sale at another price;
//   - over users, that every user's final funds are the funds given at
//     set-up plus the credits and debits of the purchases that happened:
//     every debit matched by a credit, nothing applied partially.
//
// An operation whose outcome is unknown (the client lost the reply: a
// killed connection, a timeout) may or may not have happened; both
// checkers accept either.
package history

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
)

// Kind is the kind of a recorded operation.
type Kind string

// The recorded kinds.
const (
	// List moves an item from the seller's inventory to the market.
	List Kind = "list"
	// Purchase moves a listed item to the buyer and its price from the
	// buyer to the seller.
	Purchase Kind = "purchase"
)

// Outcome is what the client learnt about an operation.
type Outcome int

// The outcomes.
const (
	// Ok: the operation was acknowledged; it happened.
	Ok Outcome = iota
	// Fail: the operation was refused before anything was written; it did
	// not happen.
	Fail
	// Unknown: the client does not know (the reply was lost after the
	// request may have reached Redis); it may or may not have happened.
	Unknown
)

// String names the outcome.
func (o Outcome) String() string {
	switch o {
	case Ok:
		return "ok"
	case Fail:
		return "fail"
	case Unknown:
		return "unknown"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Reason refines a Fail: it says what the refusal claims about the state,
// which the linearizability check verifies.
type Reason string

// The reasons the checker understands; any other refusal is ReasonOther
// and claims nothing about the item.
const (
	ReasonNone              Reason = ""
	ReasonListingNotFound   Reason = "listing_not_found"  // purchase: no such listing
	ReasonPriceChanged      Reason = "price_changed"      // purchase: listed at another price
	ReasonItemNotOwned      Reason = "item_not_owned"     // list: item not in the seller's inventory
	ReasonOther             Reason = "other"              // refused for a reason outside the item
	ReasonInsufficientFunds Reason = "insufficient_funds" // purchase: buyer could not pay
	ReasonLockNotAcquired   Reason = "lock_not_acquired"  // the lock could not be taken in time
)

// Op is one recorded operation.
type Op struct {
	// ID numbers operations in the order they were invoked.
	ID int `json:"id"`
	// Client is the recording client (a worker number).
	Client int    `json:"client"`
	Kind   Kind   `json:"kind"`
	Buyer  string `json:"buyer,omitempty"`
	Seller string `json:"seller"`
	Item   string `json:"item"`
	Price  int64  `json:"price"`
	// Call and Return are the invoke and complete times, from the
	// recorder's start. Return means nothing for Unknown outcomes.
	Call   time.Duration `json:"call_ns"`
	Return time.Duration `json:"return_ns"`
	// Outcome and, for Fail, Reason; Err is the error text, if any.
	Outcome Outcome `json:"outcome"`
	Reason  Reason  `json:"reason,omitempty"`
	Err     string  `json:"err,omitempty"`
	// Retried is set when the client sent the operation again after an
	// attempt whose outcome was unknown; Outcome is the last attempt's.
	// With an operation ID (market.OpID) the attempts apply at most once
	// between them, and the last answer is the operation's outcome.
	Retried bool `json:"retried,omitempty"`
}

// String describes the operation.
func (o Op) String() string {
	s := fmt.Sprintf("#%d c%d %s %s", o.ID, o.Client, o.Kind, o.Item)
	if o.Kind == Purchase {
		s += fmt.Sprintf(" %s->%s", o.Seller, o.Buyer)
	} else {
		s += " by " + o.Seller
	}
	s += fmt.Sprintf(" @%d: %s", o.Price, o.Outcome)
	if o.Reason != ReasonNone {
		s += " (" + string(o.Reason) + ")"
	}
	return s
}

// Recorder collects operations from concurrent clients.
type Recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []Op
}

// NewRecorder starts a recorder; times are measured from now.
func NewRecorder() *Recorder { return &Recorder{start: time.Now()} }

// Now is the time since the recorder started.
func (r *Recorder) Now() time.Duration { return time.Since(r.start) }

// Pending is an invoked operation not yet completed.
type Pending struct {
	r  *Recorder
	op Op
}

// Invoke records the invocation of an operation, now. For a List, buyer
// is empty.
func (r *Recorder) Invoke(client int, kind Kind, buyer, seller, item string, price int64) *Pending {
	return &Pending{r: r, op: Op{Client: client, Kind: kind, Buyer: buyer, Seller: seller, Item: item, Price: price, Call: r.Now()}}
}

// Retry records that the operation is sent again after an attempt whose
// outcome was unknown.
func (p *Pending) Retry() { p.op.Retried = true }

// Complete records the operation's completion with the outcome its error
// implies (see Classify), and returns that outcome.
func (p *Pending) Complete(err error) Outcome {
	o, reason := Classify(err)
	p.CompleteAs(o, reason, err)
	return o
}

// CompleteAs records the completion with an outcome decided by the
// caller (for instance from a child process's report).
func (p *Pending) CompleteAs(o Outcome, reason Reason, err error) {
	p.op.Return = p.r.Now()
	p.op.Outcome, p.op.Reason = o, reason
	if err != nil {
		p.op.Err = err.Error()
	}
	p.r.mu.Lock()
	p.op.ID = len(p.r.ops)
	p.r.ops = append(p.r.ops, p.op)
	p.r.mu.Unlock()
}

// Ops returns the completed operations, sorted by invocation time.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	ops := slices.Clone(r.ops)
	r.mu.Unlock()
	slices.SortStableFunc(ops, func(a, b Op) int { return int(a.Call - b.Call) })
	for i := range ops {
		ops[i].ID = i
	}
	return ops
}

// Counts sums the outcomes of ops.
type Counts struct {
	Attempted int `json:"attempted"`
	Ok        int `json:"ok"`
	Failed    int `json:"failed"`
	Unknown   int `json:"unknown"`
}

// Count sums the outcomes of ops.
func Count(ops []Op) Counts {
	var c Counts
	for _, o := range ops {
		c.Attempted++
		switch o.Outcome {
		case Ok:
			c.Ok++
		case Fail:
			c.Failed++
		default:
			c.Unknown++
		}
	}
	return c
}

// reasons refine the refusals that say something about the item.
var reasons = []struct {
	err    error
	reason Reason
}{
	{market.ErrListingNotFound, ReasonListingNotFound},
	{market.ErrPriceChanged, ReasonPriceChanged},
	{market.ErrItemNotOwned, ReasonItemNotOwned},
	{market.ErrInsufficientFunds, ReasonInsufficientFunds},
	{locking.ErrNotAcquired, ReasonLockNotAcquired},
}

// Classify maps an operation's error to its outcome by the market's one
// classification (market.OutcomeOf): nil is Ok; an error that means
// nothing was applied (the market's refusals, ErrContended included, a
// lock not acquired, a fenced commit refused, a command never sent or
// refused whole by Redis) is Fail, with the Reason it claims about the
// item, if any; anything else (a reply lost to a network error or a
// timeout) is Unknown.
func Classify(err error) (Outcome, Reason) {
	switch market.OutcomeOf(err) {
	case locking.Applied:
		return Ok, ReasonNone
	case locking.NotApplied:
		for _, r := range reasons {
			if errors.Is(err, r.err) {
				return Fail, r.reason
			}
		}
		return Fail, ReasonOther
	}
	return Unknown, ReasonNone
}
