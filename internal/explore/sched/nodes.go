package sched

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
	"github.com/redis/go-redis/v9"
)

// A target of several nodes (Redlock) runs on the explorer's one server:
// node i (from 1) is the server's logical database base+i, where base is
// the database the explorer was given (0 by default), and the workload's
// shared counter stays in base. Every client has a go-redis client per
// node, carrying the hook, so every command to every node is scheduled;
// the keys a command touches are qualified with its node ("KEY@n2"), so
// that the reduction tells the same key on two nodes apart. Each advance
// of the clock shortens the leases on every node.

// MaxNodes is the most nodes a target may have.
const MaxNodes = 7

// ErrNodes is returned for a model or target whose nodes do not fit.
var ErrNodes = errors.New("explore: nodes")

// openNodes opens the clients of the target's nodes, from the options of
// the explorer's clients (opts) and of its own connection (ctl).
func (e *Explorer) openNodes(opts, ctl redis.Options) error {
	t := e.target
	if t.Nodes() == 0 {
		if slices.ContainsFunc(e.model.FaultKinds, action.Fault.Node) {
			return fmt.Errorf("%w: %s strike a node: they need a target of several nodes (Redlock)",
				ErrNodes, action.NodeFaultNames())
		}
		return nil
	}
	if last := opts.DB + t.Nodes(); last > 15 {
		return fmt.Errorf(
			"%w: %d nodes from database %d need databases up to %d; a server has 16 (0 to 15)",
			ErrNodes, t.Nodes(), opts.DB, last,
		)
	}
	ns := &nodeSet{}
	for i := range t.Nodes() {
		o := ctl
		o.DB = opts.DB + 1 + i
		ns.ctl = append(ns.ctl, redis.NewClient(&o))
	}
	for ci := range e.model.Clients {
		var cs []*redis.Client
		for i := range t.Nodes() {
			o := opts
			o.DB = opts.DB + 1 + i
			o.PoolSize = 2
			c := redis.NewClient(&o)
			c.AddHook(plumbing.Hook{Node: plumbing.NodeName(i), Gate: e.slots[ci]})
			cs = append(cs, c)
		}
		ns.Clients = append(ns.Clients, cs)
	}
	t.nodes = ns
	return nil
}

// resetNodes deletes the namespace's keys on every node.
func (e *Explorer) resetNodes(ctx context.Context) error {
	if e.target.nodes == nil {
		return nil
	}
	e.nodeResetAt = e.nodeResetAt[:0]
	for i, c := range e.target.nodes.ctl {
		at, err := plumbing.ResetScript.Run(ctx, c, nil, NamespacePattern(e.KeyPrefix)).Int64()
		if err != nil {
			return fmt.Errorf("node %s (database %d): %w",
				plumbing.NodeName(i), c.Options().DB, err)
		}
		e.nodeResetAt = append(e.nodeResetAt, at)
	}
	return nil
}

// closeNodes deletes the namespace's keys on every node and closes the
// nodes' clients.
func (e *Explorer) closeNodes() error {
	ns := e.target.nodes
	if ns == nil {
		return nil
	}
	err := e.resetNodes(context.Background())
	for _, cs := range ns.Clients {
		for _, c := range cs {
			c.Close()
		}
	}
	for _, c := range ns.ctl {
		c.Close()
	}
	return err
}

// onOtherNodes reports whether a and b are commands to two different
// nodes: one client's goroutines send them in parallel, and each runs
// alone on its node, so they commute like commands of two clients.
func onOtherNodes(a, b Choice) bool {
	return a.Kind == action.Run && b.Kind == action.Run && a.p != nil && b.p != nil && a.p.node != "" &&
		b.p.node != "" &&
		a.p.node != b.p.node
}

// touch marks the node a released command goes to as possibly holding
// keys, when the command may write. w.mu is held.
func (w *world) touch(p *parked) {
	if p.node == "" || !p.write {
		return
	}
	if w.nodeDirty == nil {
		w.nodeDirty = map[string]bool{}
	}
	w.nodeDirty[p.node] = true
}

// restartNode restarts a node empty: every key of the namespace on it is
// lost.
func restartNode(
	ctx context.Context, e *Explorer, w *world, s *Schedule, a action.Action,
) (string, error) {
	keys, err := e.strikeNode(ctx, w, s, a, func(ctl *redis.Client) ([]string, error) {
		return plumbing.DropScript.Run(ctx, ctl, nil, NamespacePattern(e.KeyPrefix)).StringSlice()
	})
	if err != nil {
		return "", err
	}
	w.mu.Lock()
	delete(w.nodeDirty, a.Node)
	w.mu.Unlock()
	text := a.Node + " restarts empty (no persistence)"
	if len(keys) > 0 {
		text += ": lost " + strings.Join(keys, ", ")
	}
	return text, nil
}

// jumpNode jumps a node's clock forward by the model's Jump: every lease
// on it shortens by as much (those that run out are deleted), while the
// clients' clock does not move.
func jumpNode(ctx context.Context, e *Explorer, w *world, s *Schedule, a action.Action) (string, error) {
	keys, err := e.strikeNode(ctx, w, s, a, func(ctl *redis.Client) ([]string, error) {
		// No real time is given back: the server's own run-down since the
		// last advance is given back by the next one.
		r, err := runTick(ctx, ctl, e.KeyPrefix, w.Dilate(e.model.Jump), -1, nil, a.Node, nil, nil)
		if err == nil && r.shortest > 0 {
			w.mu.Lock()
			if w.shortest <= 0 || r.shortest < w.shortest {
				w.shortest = r.shortest
			}
			w.mu.Unlock()
		}
		return r.gone, err
	})
	if err != nil {
		return "", err
	}
	text := fmt.Sprintf(
		"%s's clock jumps %v forward: its leases shorten by as much", a.Node, e.model.Jump,
	)
	if len(keys) > 0 {
		text += "; lease ran out: " + strings.Join(keys, ", ")
	}
	return text, nil
}

// strikeNode runs do on the scheduler's client of the node a strikes, and
// returns the keys do says were lost, qualified by the node; it records
// them at the schedule's next step.
func (e *Explorer) strikeNode(
	ctx context.Context, w *world, s *Schedule, a action.Action, do func(*redis.Client) ([]string, error),
) ([]string, error) {
	i := -1
	for j := range e.target.Nodes() {
		if plumbing.NodeName(j) == a.Node {
			i = j
		}
	}
	if i < 0 {
		return nil, fmt.Errorf("%w: no node %q", ErrNodes, a.Node)
	}
	res, err := do(e.target.nodes.ctl[i])
	if err != nil {
		return nil, fmt.Errorf("explore: %s: %w", a, err)
	}
	var keys []string
	for _, k := range res {
		keys = append(keys, e.target.Short(k)+"@"+a.Node)
	}
	slices.Sort(keys)
	w.mu.Lock()
	w.nodeFalls = append(w.nodeFalls, a.String()+" at "+strconv.FormatInt(int64(w.Now), 10))
	w.mu.Unlock()
	if len(keys) > 0 {
		if s.lost == nil {
			s.lost = map[int][]string{}
		}
		s.lost[len(s.Steps)] = keys
	}
	return keys, nil
}

// nodesStruck is the nodes a fault struck in the schedule, in order.
func nodesStruck(s *Schedule) []string {
	var out []string
	for _, st := range s.Steps {
		if n := st.Action.Node; n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// tickNodes shortens the leases on every node by d (dilated), as advance does on
// the one server: since each node's last advance, or for the keys written
// since then (qualified by their node), since their write. It keeps the
// shortest lease left, and says errUnsteady as advance does.
func (e *Explorer) tickNodes(
	ctx context.Context, w *world, d time.Duration, written map[string]window,
) ([]string, error) {
	ns := e.target.nodes
	if ns == nil {
		return nil, nil
	}
	var keys []string
	for i, c := range ns.ctl {
		node := plumbing.NodeName(i)
		w.mu.Lock()
		last, ok := w.nodeTick[node]
		if !ok {
			last = e.nodeResetAt[i]
		}
		w.mu.Unlock()
		r, err := runTick(ctx, c, e.KeyPrefix, d, last, written, node, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("explore: advancing the clock on %s: %w", node, err)
		}
		w.mu.Lock()
		if w.nodeTick == nil {
			w.nodeTick = map[string]int64{}
		}
		w.nodeTick[node] = r.at
		gone, err := w.ticked(r, node)
		w.mu.Unlock()
		if err != nil {
			return nil, err
		}
		for _, k := range gone {
			key, node := plumbing.SplitNode(k)
			keys = append(keys, e.target.Short(key)+"@"+node)
		}
	}
	return keys, nil
}
