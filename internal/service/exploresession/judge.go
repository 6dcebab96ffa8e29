package exploresession

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/step"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/service/api"
)

// Bounds of a pasted lock's search (api.ExploreRequest's Clients and
// Faults): three clients by default, as the classic lock bugs need a
// third (a release by a plain DEL frees the next holder's lock), or two
// for a quicker search; the faults the page offers.
const (
	DefaultLuaClients = 3
	minLuaClients     = 2
	maxLuaClients     = 3
)

// luaFaults are the fault kinds a pasted lock may be searched under.
var luaFaults = []action.Fault{action.FaultPauseShort, action.FaultPauseLong, action.FaultPauseForever, action.FaultCrash}

// luaBounds reads the clients and faults of req, a request for a pasted
// lock: clients 0 for the default, faults nil for all of luaFaults
// (returned as nil), empty for none.
func luaBounds(req api.ExploreRequest) (clients int, faults []action.Fault, err error) {
	if req.Lua == nil {
		if req.Clients != 0 || req.Faults != nil {
			return 0, nil, api.Invalidf("clients and faults go with lua: a recipe and a strategy are searched " +
				"within the bounds of their lesson")
		}
		return 0, nil, nil
	}
	clients = req.Clients
	switch {
	case clients == 0:
		clients = DefaultLuaClients
	case clients < minLuaClients || clients > maxLuaClients:
		return 0, nil, api.Invalidf("clients %d: want %d or %d", clients, minLuaClients, maxLuaClients)
	}
	if req.Faults == nil {
		return clients, nil, nil
	}
	faults = []action.Fault{}
	for _, f := range req.Faults {
		kinds, err := action.ParseFaults(f)
		if f == "" || strings.Contains(f, ",") || err != nil ||
			slices.ContainsFunc(kinds, func(k action.Fault) bool { return !slices.Contains(luaFaults, k) }) {
			return 0, nil, api.Invalidf("faults: %q is not one of pause, %s, none", f, action.JoinFaults(luaFaults, ", "))
		}
		for _, k := range kinds {
			if !slices.Contains(faults, k) {
				faults = append(faults, k)
			}
		}
	}
	return clients, faults, nil
}

// What each property means, for a lock promising it.
var promiseWhy = map[string]string{
	result.MutualExclusion: "no two clients hold unexpired leases at once",
	result.Liveness:        "no key left without expiry keeps a live client waiting for ever",
	result.Ownership:       "a release or an extension answers success only to a client whose hold has not ended",
	result.Lease:           "the lock's key never outlives the lease its holder asked for",
	result.Resource:        "the protected resource loses no update",
}

// judging says how each property of explore.Properties() is judged for a
// session's target tg: lua for a pasted lock, unfenced for a lease lock
// whose critical section's write no fence guards (a pasted lock, an
// unfixed recipe that checks its resource).
func judging(tg *sched.Target, lua, unfenced bool) []api.Judged {
	js := make([]api.Judged, 0, len(result.Properties()))
	for _, p := range result.Properties() {
		if p == result.Holders && (tg.Lock == nil || tg.Lock.Permits == 0) {
			continue // a mutex's is mutual_exclusion
		}
		j := api.Judged{Property: p}
		switch {
		case p == result.Resource && unfenced:
			j.Judged, j.Why = api.NotPromised, fencingWord(lua)
		case (p == result.Ownership || p == result.Lease) && !lua:
			j.Judged = api.NotChecked
			j.Why = "judged for a lock given as scripts, from their replies and the lease they set; this code is not"
		case slices.Contains(tg.Checks, p):
			j.Judged, j.Why = api.Promised, promiseWhy[p]
		case p == result.Resource:
			j.Judged = api.NotChecked
			j.Why = "not this lesson's: a lease lock without fencing cannot keep it (recipe 6 shows it)"
		default:
			j.Judged, j.Why = api.NotChecked, "not this lesson's"
		}
		js = append(js, j)
	}
	return js
}

// fencingWord says why a lease lock without fencing does not promise its
// resource.
func fencingWord(lua bool) string {
	who := "This lock hands out no fencing token"
	if lua {
		who = "Your scripts hand out no fencing token"
	}
	return who + " and the counter checks none: a client paused past its lease still writes after another " +
		"took the lock, an update lost that no lease alone prevents. Only a fence the resource checks does " +
		"(recipe 6's fix). Checked, and shown, but not a bug of the lock"
}

// judgement is what a session's search found: the search of what the
// lock promises (res), of what it does not (unpromised, when nothing it
// promises broke), each property's verdict, and a note.
type judgement struct {
	res, unpromised *result.Result
	props           []api.PropertyVerdict
	note            string
}

// minUnpromised is the least budget left worth a search for what the lock
// does not promise: a lost update is found in a few seconds.
const minUnpromised = 3 * time.Second

// judge searches, depth first, the continuations of prefix (whose last
// frame broke before): first for one that breaks a property the lock
// promises; when none does, for one that breaks what it does not promise
// (a lost update). Each search stops at budget, or earlier when ctx ends
// (the search's budget as its followers grew it: left says how much of
// it is left). progress gets the schedules run so far.
func (s *session) judge(ctx context.Context, prefix []action.Action, before []result.Violation, budget time.Duration,
	left func() time.Duration, progress func(schedules int)) (judgement, error) {
	var promised, unpromised []string
	for _, j := range s.judged {
		switch j.Judged {
		case api.Promised:
			promised = append(promised, j.Property)
		case api.NotPromised:
			unpromised = append(unpromised, j.Property)
		}
	}
	var jd judgement
	search := func(check []string, budget time.Duration, base int) (*result.Result, error) {
		res, err := step.FindFrom(ctx, s.explorer(), prefix, sched.Options{Budget: budget, Check: check,
			Progress: func(p sched.Progress) { progress(base + p.Schedules) }})
		if errors.Is(err, step.ErrNothingToFind) {
			return nil, nil
		}
		return res, err
	}
	var err error
	if jd.res, err = search(promised, budget, 0); err != nil {
		return jd, err
	}
	more := ctx.Err() == nil && left() >= minUnpromised
	if jd.through() && len(unpromised) > 0 && more {
		base := 0
		if jd.res != nil {
			base = jd.res.Schedules
		}
		if jd.unpromised, err = search(unpromised, budget, base); err != nil {
			if !errors.Is(context.Cause(ctx), errBudgetSpent) {
				return jd, err
			}
			// the budget ran out before this search had begun
			jd.unpromised, more = nil, false
		}
	}
	jd.props = s.verdicts(jd, before, more)
	switch {
	case jd.res == nil:
		jd.note = "every property checked as a promise is broken already in these steps: undo to look for another way"
	case jd.res.Counterexample() != nil:
	case jd.res.Vacuous() != nil:
		jd.note = "no verdict: " + strings.TrimPrefix(jd.res.Vacuous().Error(), result.ErrVacuous.Error()+": ")
	case jd.res.Stopped != "":
		jd.note = jd.cutNote(budget)
	}
	return jd, nil
}

// through says the search of what the lock promises settled it: it was
// searched through, or broken in every property already in the steps
// searched from.
func (jd judgement) through() bool {
	r := jd.res
	return r == nil || r.Exhaustive && r.Counterexample() == nil && r.Vacuous() == nil
}

// cutNote is the note of a search whose budget ran out: it says which of
// the two searches the budget cut, the one of what the lock promises, or
// only the one of what it does not.
func (jd judgement) cutNote(budget time.Duration) string {
	others := slices.ContainsFunc(jd.props, func(v api.PropertyVerdict) bool { return v.Judged == api.NotPromised })
	switch {
	case jd.props == nil || !jd.through(): // cut, or ended before it had begun
		return fmt.Sprintf("no counterexample within %v of searching: not every continuation was covered", budget)
	case !others || jd.unpromised != nil && (jd.unpromised.Exhaustive || jd.unpromised.Counterexample() != nil):
		return jd.note // nothing was cut
	case jd.res == nil:
		return fmt.Sprintf("every property checked as a promise is broken already in these steps; what the lock "+
			"does not promise was not searched through within %v", budget)
	}
	return fmt.Sprintf("what the lock promises holds: it was searched through, in every one of the %s schedules "+
		"within the bounds; what it does not promise was not searched through within the %v budget",
		output.Thousands(int64(jd.res.Schedules)), budget)
}

// verdicts is each property's verdict after jd's searches, from a frame
// that had broken before; left tells whether budget was left for the
// search of what the lock does not promise.
func (s *session) verdicts(jd judgement, before []result.Violation, left bool) []api.PropertyVerdict {
	found := func(r *result.Result, p string) bool {
		return r != nil && slices.ContainsFunc(r.Violations, func(f result.Counterexample) bool { return f.Property == p })
	}
	schedules := func(r *result.Result) string {
		return fmt.Sprintf("in every one of the %s schedules within the bounds", output.Thousands(int64(r.Schedules)))
	}
	// settled says what a search r that did not break p says of it.
	settled := func(r *result.Result) (string, string) {
		switch {
		case r.Counterexample() != nil:
			return api.Open, "not searched further: the search stops at the first property it finds broken"
		case r.Vacuous() != nil:
			return api.Open, "no verdict: the search proved nothing (see the note)"
		case !r.Exhaustive:
			return api.Open, "not every continuation was covered within the search's budget"
		}
		return api.Holds, schedules(r)
	}
	var vs []api.PropertyVerdict
	for _, j := range s.judged {
		v := api.PropertyVerdict{Property: j.Property, Judged: j.Judged}
		broke := api.Broken
		if j.Judged == api.NotPromised {
			broke = api.NotPromised
		}
		switch {
		case j.Judged == api.NotChecked:
			v.Verdict, v.Note = api.NotChecked, j.Why
		case slices.ContainsFunc(before, func(x result.Violation) bool { return x.Property == j.Property }):
			v.Verdict, v.Note = broke, "broken already in the steps searched from"
		case j.Judged == api.Promised && jd.res == nil:
			v.Verdict, v.Note = api.Open, "not searched: every property the lock promises broke in these steps"
		case j.Judged == api.Promised && found(jd.res, j.Property):
			v.Verdict, v.Note = api.Broken, "found: the counterexample shows it"
		case j.Judged == api.Promised:
			v.Verdict, v.Note = settled(jd.res)
		case found(jd.unpromised, j.Property):
			v.Verdict, v.Note = api.NotPromised, j.Why
		case jd.unpromised != nil:
			v.Verdict, v.Note = settled(jd.unpromised)
		case jd.res != nil && jd.res.Counterexample() != nil:
			v.Verdict, v.Note = api.Open, "not searched: the lock broke what it promises"
		case !left:
			v.Verdict, v.Note = api.Open, "not searched: the search's budget ran out"
		default:
			v.Verdict, v.Note = api.Open, "not searched: the lock's search proved nothing"
		}
		vs = append(vs, v)
	}
	return vs
}
