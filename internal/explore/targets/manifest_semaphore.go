package targets

import (
	"encoding/json"
	"strings"

	"github.com/lockmarket/lockmarket/internal/explore/sched"
)

// lockSemaphore is a lock that N clients may hold at once: a manifest's
// "lock": "semaphore" with "permits": N. Its ops are a mutex's.
const lockSemaphore = "semaphore"

// MaxPermits is the most permits a semaphore's manifest may declare: the
// explorer runs at most 4 clients, and holders breaks only when one more
// client than the semaphore has permits holds.
const MaxPermits = 3

// readPermits reads the manifest's permits (top) for a lock of kind
// lock: a number from 1 to MaxPermits for a semaphore, which must give
// it, and no field at all for any other lock.
func readPermits(top *object, lock string) (int, error) {
	if lock != lockSemaphore {
		if _, ok := top.fields["permits"]; ok {
			return 0, badField(
				"permits", "goes with \"lock\": \"semaphore\" (a %s has no permits to count)", lock,
			)
		}
		return 0, nil
	}
	if !top.has("permits") {
		return 0, badField(
			"permits", "missing: a semaphore needs its number of permits (1 to %d)", MaxPermits,
		)
	}
	raw := strings.TrimSpace(string(top.fields["permits"]))
	var v any
	n, ok := v.(json.Number)
	if err := strictUnmarshal(top.fields["permits"], &v); err == nil {
		n, ok = v.(json.Number)
	}
	if !ok {
		return 0, badField("permits", "%s: want a whole number from 1 to %d", raw, MaxPermits)
	}
	p, err := n.Int64()
	if err != nil || p < 1 || p > MaxPermits {
		return 0, badField(
			"permits", "%s: want a whole number from 1 to %d (the explorer runs at most %d "+
				"clients, and holders breaks only when one more than the permits hold)",
			raw, MaxPermits, MaxPermits+1,
		)
	}
	return int(p), nil
}

// semaphore sets up t, the target of a semaphore's recipe r: holders
// instead of mutual_exclusion, and one client more than it has permits.
func (r *recipe) semaphore(t *sched.Target) {
	if r.permits == 0 {
		return
	}
	t.Lock.Permits = r.permits
	t.Clients = r.permits + 1
	t.Checks = t.ExclusionNames(t.Checks)
}

// displace records, for a semaphore, the holds a take by client c (just
// answered a success) must have taken the permit of: when the other
// clients that hold the lock, by what they believe, are as many as the
// permits, the take needed one of their permits, and a hold whose lease
// has run out on the virtual clock is the one that lost it. When more
// holds have run out than the take needs, which one lost its permit is
// not known, and none is marked (ownership then judges none of them by
// this take); when too few have, holders is broken, and is reported as
// such. s is the runtime's record as the take answered; r.mu is held.
func (r *recipe) displace(s sched.Snapshot, taker string) {
	if r.permits == 0 {
		return
	}
	var others, expired []*recipeHeld
	for _, d := range s.Clients {
		if d.Hold == nil {
			continue
		}
		h, ok := d.Hold.Held.(*recipeHeld)
		if d.Name == taker || !ok || h.lease.displacedBy != "" {
			continue
		}
		others = append(others, h)
		if end := h.End(); end >= 0 && s.Now >= end {
			expired = append(expired, h)
		}
	}
	need := len(others) - r.permits + 1
	if need <= 0 || len(expired) > need {
		return
	}
	for _, h := range expired {
		h.lease.displacedBy = taker
	}
}

// displacedWhy says why hold h had ended when its permit went to another
// client's take (displace); "" when it did not.
func (h *recipeHeld) displacedWhy() string {
	if h.lease.displacedBy == "" {
		return ""
	}
	return "its lease had run out and " + h.lease.displacedBy + " had taken its permit since"
}
