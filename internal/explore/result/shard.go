package result

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/search"
)

// ShardOf is the result's account of shard sh, cut and searched as r
// says (nil for a whole search).
func ShardOf(sh search.Shard, r search.Result[action.Action]) *ShardInfo {
	if sh.Count <= 1 {
		return nil
	}
	s := &ShardInfo{Index: sh.Index, Count: sh.Count, Explored: r.Explored}
	if split := r.Split; split != nil {
		s.Depth, s.Subtrees, s.Runs = split.Depth, split.Subtrees, split.Runs
		s.Digest = split.Digest
	}
	return s
}

// ErrMerge is wrapped by MergeShards's errors: results that are not the
// shards of one search, all of them, once each.
var ErrMerge = errors.New("cannot merge")

// Part is a shard's result as MergeShards takes it, with the name its
// errors give it (a file's).
type Part struct {
	Name   string
	Result *Result
}

// MergeShards makes one result of the results of every shard of one
// search. Its schedules and pruned runs are the whole search's
// (WholeCount) when every shard was exhaustive and kept what it explored
// (ShardInfo.Explored): search.Recount counts them over the shards'
// records; else they are the shards' sums. ShardSchedules and
// ShardPruned are the sums either way: what the shards ran. The replays
// that diverged and the schedules with a holder and the ops' counts are
// summed too (what the shards ran), the shortest counterexample of each
// property is kept (of two as short, the first in the order of the
// actions), the result is exhaustive only if every shard was, the
// coverage is the sum of the shards' shares, the time the longest
// shard's. It refuses (ErrMerge, naming the part) a result that is no
// shard, a shard of another search (target, model, options, program or
// cut), a shard given twice, a shard missing, and records that do not
// recount.
func MergeShards(parts []Part) (*Result, error) {
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w: no shard given", ErrMerge)
	}
	if err := checkShards(parts); err != nil {
		return nil, err
	}
	first := parts[0].Result
	m := *first
	m.Shard, m.MergedShards, m.WholeCount = nil, first.Shard.Count, false
	m.Schedules, m.Pruned, m.Diverged, m.Reruns, m.Held = 0, 0, 0, 0, 0
	m.Coverage, m.Elapsed, m.Exhaustive, m.Stopped = 0, 0, true, ""
	m.Violations, m.Unsteady = nil, nil
	m.Ops = nil
	for _, p := range parts {
		r := p.Result
		m.Schedules += r.Schedules
		m.Pruned += r.Pruned
		m.Diverged += r.Diverged
		m.Reruns += r.Reruns
		m.Held += r.Held
		m.Coverage += r.Coverage
		m.Elapsed = max(m.Elapsed, r.Elapsed)
		m.Budget = max(m.Budget, r.Budget)
		m.Exhaustive = m.Exhaustive && r.Exhaustive
		m.Stopped = cmpOr(m.Stopped, r.Stopped)
		m.Violations = shortest(m.Violations, r.Violations)
		m.Unsteady = shortest(m.Unsteady, r.Unsteady)
		m.Ops = addOps(m.Ops, r.Ops)
	}
	// What one shard found unsteady, another may have replayed: the
	// property is broken.
	m.Unsteady = slices.DeleteFunc(m.Unsteady, func(u Counterexample) bool {
		return slices.ContainsFunc(m.Violations, func(v Counterexample) bool {
			return v.Property == u.Property
		})
	})
	switch {
	case m.Exhaustive:
		m.Coverage = 1
	case m.Coverage >= 1:
		m.Coverage = 1 - 1e-9
	}
	m.ShardSchedules, m.ShardPruned = m.Schedules, m.Pruned
	if err := recount(&m, parts); err != nil {
		return nil, err
	}
	return &m, nil
}

// recount sets m's counts to the whole search's, from the records of
// parts, when every one is exhaustive and has one.
func recount(m *Result, parts []Part) error {
	var es []*search.Explored[action.Action]
	for _, p := range parts {
		if !p.Result.Exhaustive || p.Result.Shard.Explored == nil {
			return nil
		}
		es = append(es, p.Result.Shard.Explored)
	}
	st, err := search.Recount(es)
	if err != nil {
		name := "the shards"
		var pe *search.PartError
		if errors.As(err, &pe) {
			name, err = parts[pe.Part].Name, pe.Err
		}
		return fmt.Errorf("%w: %s: %v", ErrMerge, name,
			strings.TrimPrefix(err.Error(), search.ErrRecount.Error()+": "))
	}
	m.Schedules, m.Pruned, m.WholeCount = st.Schedules, st.Pruned, true
	return nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// checkShards refuses parts that are not every shard of one search, once.
func checkShards(parts []Part) error {
	first := parts[0]
	if first.Result.Shard == nil {
		return fmt.Errorf("%w: %s: not a shard (no shard block: run it with -shard i/N)",
			ErrMerge, first.Name)
	}
	f := first.Result.Shard
	byIndex := map[int]string{}
	for _, p := range parts {
		s := p.Result.Shard
		var why string
		switch {
		case s == nil:
			why = "not a shard (no shard block: run it with -shard i/N)"
		case s.Count != f.Count:
			why = fmt.Sprintf("a shard of %d, %s one of %d", s.Count, first.Name, f.Count)
		case s.Index < 0 || s.Index >= s.Count:
			why = fmt.Sprintf("shard %d of %d: no such shard", s.Index, s.Count)
		case byIndex[s.Index] != "":
			why = fmt.Sprintf("shard %d/%d given twice (%s is it too)", s.Index, s.Count,
				byIndex[s.Index])
		case p.Result.Target != first.Result.Target:
			why = fmt.Sprintf("a shard of %q, %s of %q", p.Result.Target, first.Name,
				first.Result.Target)
		case s.Fingerprint != f.Fingerprint:
			why = fmt.Sprintf("a shard of another search (its target's code, model or "+
				"options differ from %s's)", first.Name)
		case s.Commit != f.Commit:
			why = fmt.Sprintf("written by %s, %s by %s", orUnknown(s.Commit), first.Name,
				orUnknown(f.Commit))
		case s.Digest != f.Digest || s.Depth != f.Depth:
			why = fmt.Sprintf("its search cut the tree otherwise than %s's: the code did "+
				"something the scheduler does not order", first.Name)
		}
		if why != "" {
			return fmt.Errorf("%w: %s: %s", ErrMerge, p.Name, why)
		}
		byIndex[s.Index] = p.Name
	}
	var missing []string
	for i := range f.Count {
		if byIndex[i] == "" {
			missing = append(missing, fmt.Sprintf("%d/%d", i, f.Count))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: shard %s missing (given: %s)", ErrMerge,
			strings.Join(missing, ", "), strings.Join(partNames(parts), ", "))
	}
	return nil
}

func orUnknown(s string) string {
	if s == "" {
		return "an unknown version"
	}
	return s
}

func partNames(parts []Part) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p.Name)
	}
	return out
}

// shortest adds the counterexamples of fs to have, keeping the shortest
// of each property (of two as short, the first by CompareActions), in the
// order of the properties.
func shortest(have, fs []Counterexample) []Counterexample {
	for _, f := range fs {
		i := slices.IndexFunc(have, func(h Counterexample) bool { return h.Property == f.Property })
		switch {
		case i < 0:
			have = append(have, f)
		case len(f.Actions) < len(have[i].Actions) ||
			len(f.Actions) == len(have[i].Actions) &&
				action.CompareActions(f.Actions, have[i].Actions) < 0:
			have[i] = f
		}
	}
	slices.SortStableFunc(have, func(a, b Counterexample) int {
		return slices.Index(properties, a.Property) - slices.Index(properties, b.Property)
	})
	return have
}

// addOps adds the counts of one shard's ops to those of others.
func addOps(have, ops []OpCount) []OpCount {
	for _, o := range ops {
		i := slices.IndexFunc(have, func(h OpCount) bool { return h.Op == o.Op })
		if i < 0 {
			have = append(have, OpCount{Op: o.Op, OK: o.OK})
			i = len(have) - 1
		}
		h := &have[i]
		h.Calls += o.Calls
		h.Succeeded += o.Succeeded
		h.Replies = addReplies(h.Replies, o.Replies)
	}
	return have
}

// addReplies adds replies counted as "REPLY ×N" to others.
func addReplies(have, rs []string) []string {
	for _, r := range rs {
		reply, n := splitReply(r)
		i := slices.IndexFunc(have, func(h string) bool {
			x, _ := splitReply(h)
			return x == reply
		})
		if i < 0 {
			have = append(have, r)
			continue
		}
		_, m := splitReply(have[i])
		have[i] = fmt.Sprintf("%s ×%d", reply, n+m)
	}
	return have
}

// splitReply reads "REPLY ×N".
func splitReply(r string) (string, int) {
	i := strings.LastIndex(r, " ×")
	if i < 0 {
		return r, 0
	}
	n, err := strconv.Atoi(r[i+len(" ×"):])
	if err != nil {
		return r, 0
	}
	return r[:i], n
}
