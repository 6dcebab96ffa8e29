package result

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockmarket/lockmarket/internal/explore/search"
)

// Violation is a property found broken: Property is mutual_exclusion,
// resource or liveness; Message says how; Step is the index in the
// schedule's steps where it broke (the last step for the properties
// checked at the end).
type Violation = search.Violation

// The properties.
const (
	MutualExclusion = "mutual_exclusion"
	Resource        = "resource"
	Liveness        = "liveness"
	// Holders is a semaphore's mutual exclusion: at most Lock.Permits
	// clients hold at once, with leases that have not run out. For a
	// mutex it is MutualExclusion, and keeps that name.
	Holders = "holders"
)

// properties lists the properties in the order they are reported.
var properties = []string{MutualExclusion, Holders, Resource, Liveness, Ownership, Lease}

// Properties lists the properties in the order they are reported; the
// slice is the caller's.
func Properties() []string { return slices.Clone(properties) }

// Ownership is the property that a release or an extension answered as
// a success was one of a hold that had not ended: its lease had not run
// out, and no other client had taken the lock since.
const Ownership = "ownership"

// OwnerName is a client's ${client}.
func OwnerName(client string) string { return "client-" + client }

// Lease is the property that the lock's key never outlives the lease its
// holder asked for: no command lengthens the time the key ${lock} has
// left to live by more than the longest lease a client asks for (its
// ${ttl}, in the manifest's ttl_unit). A take leaves it at most one lease;
// an extension at most one lease more than it had left (an extension may
// set the lease anew, or add to it, as some libraries do). It is checked
// after every command that writes the key. An extension that hands
// EXPIRE milliseconds breaks it: a crashed holder then blocks everyone a
// thousand times longer than it meant to. A key without expiry is for
// liveness to judge. Only recipes (manifests, Lua scripts) check it.
const Lease = "lease"

// ParseProperties reads a comma-separated list of properties to check
// (Properties), or "all" for every one. An empty s is none: the target's
// own.
func ParseProperties(s string) ([]string, error) {
	switch s {
	case "":
		return nil, nil
	case "all":
		return Properties(), nil // the caller's to change
	}
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(properties, p) {
			return nil, fmt.Errorf(
				"unknown property %q (want %s)", p, strings.Join(properties, ", "),
			)
		}
		out = append(out, p)
	}
	return out, nil
}
