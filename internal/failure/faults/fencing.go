package faults

import "github.com/lockmarket/lockmarket/market"

// FencingAvailable reports whether the market offers fenced lock
// strategies; the "+fencing" variants run only then.
const FencingAvailable = true

// fencingOption is the market option that fences the lock strategies: a
// commit by a holder whose lease has passed is refused (locking.ErrLockLost).
func fencingOption() market.Option { return market.WithFencing() }
