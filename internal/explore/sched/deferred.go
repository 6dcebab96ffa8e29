package sched

// Leases kept for a WATCH: the clock advances by shortening every lease on
// the server (PEXPIRE), and Redis counts a PEXPIRE as a change of the key,
// so a transaction that WATCHes a leased key would see its EXEC fail
// because time passed, which never happens on a real clock (only a lease
// that runs out, a deletion, changes the key). So while a client WATCHes a
// key, an advance of the clock leaves its lease on the server as it was,
// and the key is owed the time that passed (world.owed). The debt is paid
// (the lease shortened by as much) at the first advance after nothing
// watches the key, and before any command that could tell: one that reads
// or sets a time to live (rediscmd.SeesTTL: PTTL, PEXPIRE, a SET, a script that may, a
// command the table does not know), and the explorer's own reads of a
// lease. Paying then makes the EXEC of a transaction watching the key fail,
// as every advance did before; a key that runs out is deleted at the
// advance as any other. A key owed time is named in the state
// (world.state): what follows may pay it.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
	"github.com/lockmarket/lockmarket/internal/redis/rediscmd"
)

// watchedKeys is every key a client WATCHes, sorted. w.mu is held.
func (w *world) watchedKeys() []string {
	var keys []string
	for _, ks := range w.watching {
		for _, k := range ks {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// noteWatches follows the WATCHes of client c through the commands args
// it sent to the one server: a WATCH adds its keys, an EXEC, DISCARD or
// UNWATCH ends them all. w.mu is held.
func (w *world) noteWatches(c *clientState, args [][]string) {
	for _, a := range args {
		switch rediscmd.Name(a) {
		case "watch":
			if w.watching == nil {
				w.watching = map[string][]string{}
			}
			for _, k := range a[1:] {
				if !slices.Contains(w.watching[c.Name], k) {
					w.watching[c.Name] = append(w.watching[c.Name], k)
				}
			}
		case "exec", "discard", "unwatch":
			delete(w.watching, c.Name)
		}
	}
}

// execWatches is the keys p's client WATCHes when p sends an EXEC, which
// fails if one of them changed since. w.mu is held.
func (w *world) execWatches(p *parked) []string {
	if p.node != "" || len(w.watching[p.c.Name]) == 0 {
		return nil
	}
	for _, args := range p.args {
		if rediscmd.Name(args) == "exec" {
			return w.watching[p.c.Name]
		}
	}
	return nil
}

// owedArgs is the arguments plumbing.TickScript and plumbing.SettleScript
// take for the watched keys and the time owed: the keys, then each key
// owed and its debt.
func owedArgs(watched []string, owed map[string]int64) []any {
	var args []any
	for _, k := range watched {
		args = append(args, k)
	}
	for _, k := range slices.Sorted(maps.Keys(owed)) {
		args = append(args, k, owed[k])
	}
	return args
}

// parseOwed reads the pairs of a key and its debt the scripts answer.
func parseOwed(pairs []string) (map[string]int64, error) {
	if len(pairs)%2 != 0 {
		return nil, fmt.Errorf("owed time %q", pairs)
	}
	var owed map[string]int64
	for i := 0; i < len(pairs); i += 2 {
		n, err := strconv.ParseInt(pairs[i+1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("owed time %q: %w", pairs, err)
		}
		if owed == nil {
			owed = map[string]int64{}
		}
		owed[pairs[i]] = n
	}
	return owed, nil
}

// How payOwed settles the keys owed time (plumbing.SettleScript).
const (
	payAll       = "all"       // pay every key
	payUnwatched = "unwatched" // pay the keys nothing watches
	payCheck     = "check"     // pay none: forget the keys gone
)

// payOwed settles, as how says, the keys in keys that are owed time (every
// key owed, for nil keys).
func (w *world) payOwed(ctx context.Context, keys []string, how string) error {
	w.mu.Lock()
	owed := map[string]int64{}
	for k, n := range w.owed {
		if keys == nil || slices.Contains(keys, k) {
			owed[k] = n
		}
	}
	watched := w.watchedKeys()
	w.mu.Unlock()
	if len(owed) == 0 {
		return nil
	}
	args := append([]any{how, len(watched)}, owedArgs(watched, owed)...)
	res, err := plumbing.SettleScript.Run(ctx, w.Control, nil, args...).StringSlice()
	if err != nil {
		return fmt.Errorf("explore: shortening the leases kept for a WATCH: %w", err)
	}
	kept, err := parseOwed(res)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := range owed {
		delete(w.owed, k)
		delete(w.maybeGone, k)
	}
	if w.owed == nil {
		w.owed = map[string]int64{}
	}
	maps.Copy(w.owed, kept)
	return nil
}

// SettleLeases shortens every lease the clock kept for a WATCH by the time
// it is owed, so that the server's time to live of every key is its
// virtual one: before a read of a lease by the explorer or a target.
func (w *world) SettleLeases(ctx context.Context) error { return w.payOwed(ctx, nil, payAll) }

// payBefore pays, before p runs, the keys owed time that a command of p
// could tell the time to live of (rediscmd.SeesTTL): all of them for a
// command on keys it does not name or a script that may read one. A SET
// NX, which does nothing to a key that exists, makes a lease anew on one
// that a command deleted: before it, a key owed time that may be gone
// (world.maybeGone) is looked up, and forgotten if gone.
func (w *world) payBefore(ctx context.Context, p *parked) error {
	if p.node != "" {
		return nil
	}
	w.mu.Lock()
	if len(w.owed) == 0 {
		w.mu.Unlock()
		return nil
	}
	owed, maybeGone := maps.Clone(w.owed), maps.Clone(w.maybeGone)
	w.mu.Unlock()
	var pay, check []string
	removed := map[string]bool{}
	for _, args := range p.args {
		ks, _ := rediscmd.Keys(args)
		sees := rediscmd.SeesTTL(args)
		set := rediscmd.Name(args) == "set"
		for _, k := range ks {
			if k == rediscmd.Unknown || sees && rediscmd.IsScript(args) {
				return w.payOwed(ctx, nil, payAll)
			}
			if _, ok := owed[k]; !ok {
				continue
			}
			switch {
			case sees || set && removed[k]:
				pay = append(pay, k)
			case set && maybeGone[k]:
				check = append(check, k)
			}
		}
		if rediscmd.Removes(args) {
			for _, k := range ks {
				removed[k] = true
			}
		}
	}
	if len(pay) > 0 {
		if err := w.payOwed(ctx, pay, payAll); err != nil {
			return err
		}
	}
	if len(check) > 0 {
		return w.payOwed(ctx, check, payCheck)
	}
	return nil
}

// noteRemovals marks the keys owed time that p may have deleted
// (rediscmd.Removes; every key for a script, which may touch keys it does
// not name): one that is gone owes nothing, and one made anew must not
// pay the old debt (payBefore).
func (w *world) noteRemovals(p *parked) {
	if p.node != "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, args := range p.args {
		if len(w.owed) == 0 || !rediscmd.Removes(args) {
			continue
		}
		keys, _ := rediscmd.Keys(args)
		if rediscmd.IsScript(args) || slices.Contains(keys, rediscmd.Unknown) {
			keys = slices.Collect(maps.Keys(w.owed))
		}
		for _, k := range keys {
			if _, ok := w.owed[k]; ok {
				if w.maybeGone == nil {
					w.maybeGone = map[string]bool{}
				}
				w.maybeGone[k] = true
			}
		}
	}
}

// owedText names the keys owed time, for the state. w.mu is held.
func (w *world) owedText() string {
	if len(w.owed) == 0 {
		return ""
	}
	var keys []string
	for _, k := range slices.Sorted(maps.Keys(w.owed)) {
		keys = append(keys, w.Target.Short(k))
	}
	return "owed " + strings.Join(keys, " ") + "\n"
}
