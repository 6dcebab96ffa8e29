package targets

import (
	"context"
	"crypto/sha256"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/search"
	"github.com/lockmarket/lockmarket/internal/testsupport/race"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// finalStates is the explorer as the search sees it, noting the end
// state of each complete schedule: its fingerprint up to the clients'
// names (canonical), and the properties it broke; for the market, what it
// holds at the end (marketState).
type finalStates struct {
	sched.System
	mu     *sync.Mutex
	seen   map[search.Fingerprint]bool
	market bool
}

func (f finalStates) Run(
	ctx context.Context,
	choose search.Chooser[sched.Choice],
) (search.Outcome, error) {
	out, err := f.System.Run(ctx, choose)
	if err != nil || !out.Complete {
		return out, err
	}
	s := out.Data.(*sched.Schedule)
	fp, _, ok := s.Canonical()
	if f.market {
		fp, err = marketState(ctx, f.Explorer, out.Violations)
		ok = err == nil
	}
	if ok {
		f.mu.Lock()
		f.seen[fp] = true
		f.mu.Unlock()
	}
	return out, err
}

// marketState names what the market holds at the end of a schedule (what
// is listed, each user's funds and items) and the properties it broke,
// up to the buyers' names: the market's replies carry the server's clock
// (a sale's stream ID), which its fingerprint rounds but cannot drop.
func marketState(
	ctx context.Context, e *sched.Explorer, broken []search.Violation,
) (search.Fingerprint, error) {
	text, err := marketResource(ctx, e.Redis, e.KeyPrefix)
	if err != nil {
		return search.Fingerprint{}, err
	}
	a, b := sched.ClientName(0), sched.ClientName(1)
	swap := strings.NewReplacer("; "+a+": ", "; "+b+": ", "; "+b+": ", "; "+a+": ")
	canon := func(text string) string {
		parts := strings.Split(text, "; ")
		slices.Sort(parts[1:]) // after what is listed, each user's part
		return strings.Join(parts, "; ")
	}
	text = min(canon(text), canon(swap.Replace(text)))
	for _, v := range broken {
		text += "\nbroken " + v.Property
	}
	return sha256.Sum256([]byte(text)), nil
}

// TestReducedSearchKeepsFinalStates: on small models of alike clients, the
// reduced search (sleep sets, the state cache shared by two workers, the
// symmetry) reaches the final states the search without reductions reaches, up
// to the clients' names, and finds the same properties broken, as soon. The
// market's buyers are a group of interchangeable clients beside its seller
// (renamed, C never), with the fine lock unfenced (the sword sold twice)
// and fenced.
func TestReducedSearchKeepsFinalStates(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	for _, tc := range []struct {
		recipe   string
		strategy market.Strategy
		fixed    bool
		clients  int
		faults   []action.Fault
		ticks    int
	}{
		{"1", "", false, 2, nil, 1},
		{"2", "", false, 2, []action.Fault{action.FaultCrash}, 1},
		{"4", "", true, 2, []action.Fault{action.FaultCrash}, 1},
		{"", market.Fine, false, 2, []action.Fault{action.FaultPauseLong}, 1},
		{"", market.Fine, true, 2, []action.Fault{action.FaultPauseLong}, 1},
	} {
		if race.Enabled && tc.recipe == "2" {
			continue // the full run without -race has it
		}
		tg, err := Recipe(tc.recipe, tc.fixed)
		if tc.strategy != "" {
			tg, err = Strategy(tc.strategy, tc.fixed)
		}
		if err != nil {
			t.Fatal(err)
		}
		m := action.DefaultModel()
		m.Clients, m.FaultKinds, m.Ticks = tc.clients, tc.faults, tc.ticks
		if tc.faults == nil {
			m.Faults = 0
		}
		var explorers []*sched.Explorer
		for range 2 {
			e, err := sched.NewExplorer(ctx, b.Client, tg, m)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			explorers = append(explorers, e)
		}
		// One schedule first: the server then knows the scripts (the
		// first EVALSHA of a fresh server, refused, is in its client's
		// log and the state's fingerprint).
		firstEnabled := func(search.Decision[sched.Choice]) (int, bool) { return 0, true }
		sys0 := search.System[sched.Choice, action.Action](sched.System{Explorer: explorers[0]})
		if _, err := search.Replay(ctx, sys0, nil, firstEnabled); err != nil {
			t.Fatal(err)
		}
		run := func(
			o search.Options[action.Action], symmetric bool, workers int,
		) (map[search.Fingerprint]bool, search.Result[action.Action]) {
			seen, mu := map[search.Fingerprint]bool{}, &sync.Mutex{}
			var sys []search.System[sched.Choice, action.Action]
			for _, e := range explorers[:workers] {
				e.Symmetric = symmetric
				sys = append(
					sys,
					finalStates{System: sched.System{Explorer: e}, mu: mu, seen: seen,
						market: tc.strategy != ""},
				)
			}
			o.Less = action.CompareAction
			s := search.New(sys, o)
			if err := s.Exhaustive(ctx, nil); err != nil {
				t.Fatal(err)
			}
			return seen, s.Result()
		}
		name := tg.Name
		full, fres := run(search.Options[action.Action]{}, true, 1)
		got, res := run(search.Options[action.Action]{Sleep: true, Cache: true}, true, 2)
		t.Logf(
			"%s: %d schedules, %d without reductions; %d final states", name, res.Schedules,
			fres.Schedules, len(full),
		)
		if !res.Exhaustive || !fres.Exhaustive || res.Schedules >= fres.Schedules {
			t.Errorf(
				"%s: exhaustive %v, without reductions %v", name, res.Exhaustive, fres.Exhaustive,
			)
		}
		if len(full) == 0 || !maps.Equal(full, got) {
			t.Errorf(
				"%s: %d final states, %d without reductions (%d in common)",
				name,
				len(got),
				len(full),
				len(
					slices.DeleteFunc(
						slices.Collect(maps.Keys(got)),
						func(k search.Fingerprint) bool { return !full[k] },
					),
				),
			)
		}
		a, b := slices.Sorted(maps.Keys(res.Violations)), slices.Sorted(maps.Keys(fres.Violations))
		if !slices.Equal(a, b) {
			t.Errorf("%s: broke %v, without reductions %v", name, a, b)
		}
		for p, f := range fres.Violations {
			if g := res.Violations[p]; len(g.Path) != len(f.Path) {
				t.Errorf(
					"%s: %s in %d steps, without reductions %d", name, p, len(g.Path), len(f.Path),
				)
			}
		}
		// Dynamic partial-order reduction with the sleep sets, in place of
		// the cache: the same final states and properties broken (its
		// counterexamples may be longer: the explorer shortens them).
		got, dres := run(search.Options[action.Action]{Sleep: true, DPOR: true}, true, 2)
		t.Logf("%s, DPOR: %d schedules (+%d cut)", name, dres.Schedules, dres.Pruned)
		if !dres.Exhaustive || !maps.Equal(full, got) {
			t.Errorf(
				"%s, DPOR: exhaustive %v, %d final states, %d without reductions", name,
				dres.Exhaustive, len(got), len(full),
			)
		}
		a, b = slices.Sorted(maps.Keys(dres.Violations)), slices.Sorted(maps.Keys(fres.Violations))
		if !slices.Equal(a, b) {
			t.Errorf("%s, DPOR: broke %v, without reductions %v", name, a, b)
		}
	}
}
