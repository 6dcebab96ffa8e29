package sched

// An advance of the virtual clock on a server: each lease shortened by
// as much, and what ran out.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
	"github.com/redis/go-redis/v9"
)

// ticked takes in what an advance did on the one server (node "") or a
// node: the shortest lease left, and the keys whose lease ran out, which
// it returns qualified by node; errUnsteady when the advance could not
// tell. w.mu is held.
func (w *world) ticked(r tickResult, node string) ([]string, error) {
	if r.shortest > 0 && (w.shortest <= 0 || r.shortest < w.shortest) {
		w.shortest = r.shortest
	}
	if r.unsteady {
		return nil, errUnsteady
	}
	if node == "" {
		w.owed, w.maybeGone = r.owed, nil
	}
	var gone []string
	for _, k := range r.gone {
		if node != "" {
			k += "@" + node
		}
		gone = append(gone, k)
		w.keyLog[k] = append(w.keyLog[k], "lease ran out at "+strconv.FormatInt(int64(w.Now), 10))
	}
	return gone, nil
}

// tickResult is what plumbing.TickScript answered.
type tickResult struct {
	at       int64         // the server's time, µs
	shortest time.Duration // the shortest lease left on the server (dilated); 0 for none
	unsteady bool
	gone     []string // the keys whose lease ran out
	// owed is each watched key's time owed (µs of the server's time):
	// its lease was kept (see deferred.go).
	owed map[string]int64
}

// runTick runs plumbing.TickScript on rdb over the namespace ns: leases shorten by
// d (dilated: the server's time), less the real time since last (the server's time of the last
// advance, µs; -1 for none to give back) or, for the keys written since
// (those of node, "" for the one server), since their write.
//
// The keys in watched keep their lease on the server and are owed the time
// instead; owed is what each key is owed already (deferred.go).
func runTick(
	ctx context.Context, rdb redis.Scripter, ns string, d time.Duration, last int64,
	written map[string]window, node string, watched []string, owed map[string]int64,
) (tickResult, error) {
	var wins []any
	for k, win := range written {
		if key, n := plumbing.SplitNode(k); n == node {
			wins = append(wins, key, win.sent.UnixMicro(), win.replied.UnixMicro())
		}
	}
	args := append([]any{NamespacePattern(ns), d.Microseconds(), last, len(wins) / 3}, wins...)
	args = append(append(args, len(watched)), owedArgs(watched, owed)...)
	res, err := plumbing.TickScript.Run(ctx, rdb, nil, args...).StringSlice()
	if err != nil {
		return tickResult{}, err
	}
	var sec, usec, shortest int64
	if len(res) >= 4 {
		sec, err = strconv.ParseInt(res[0], 10, 64)
	}
	if err == nil && len(res) >= 4 {
		usec, err = strconv.ParseInt(res[1], 10, 64)
	}
	if err == nil && len(res) >= 4 {
		shortest, err = strconv.ParseInt(res[2], 10, 64)
	}
	if err != nil || len(res) < 4 {
		return tickResult{}, fmt.Errorf("reply %q", res)
	}
	n, err := 0, error(nil)
	if len(res) >= 5 {
		n, err = strconv.Atoi(res[4])
	}
	if err != nil || len(res) < 5+n {
		return tickResult{}, fmt.Errorf("reply %q", res)
	}
	owedNow, err := parseOwed(res[5+n:])
	if err != nil {
		return tickResult{}, err
	}
	return tickResult{
		at:       sec*1_000_000 + usec,
		shortest: time.Duration(max(shortest, 0)) * time.Millisecond,
		unsteady: res[3] == "1",
		gone:     res[5 : 5+n],
		owed:     owedNow,
	}, nil
}
