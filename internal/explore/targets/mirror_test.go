package targets

import (
	"context"
	mrand "math/rand/v2"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/search"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// TestMarketBuyersMirror: a schedule of the market and the same schedule
// with the buyers A and B swapped end in states of one canonical
// fingerprint (the symmetry names them alike), whatever the strategy,
// while the seller C keeps its part.
func TestMarketBuyersMirror(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	swap := strings.NewReplacer("users:A", "users:B", "users:B", "users:A",
		"inventory:A", "inventory:B", "inventory:B", "inventory:A")
	mirror := func(a action.Action) action.Action {
		switch a.Client {
		case "A":
			a.Client = "B"
		case "B":
			a.Client = "A"
		}
		a.Command = swap.Replace(a.Command)
		return a
	}
	walks := 6
	if testing.Short() {
		walks = 2
	}
	for _, tc := range []struct {
		s       market.Strategy
		fencing bool
	}{
		{market.Watch, false}, {market.Coarse, false}, {market.Fine, false},
		{market.Fine, true}, {market.Lua, false},
	} {
		tg, err := Strategy(tc.s, tc.fencing)
		if err != nil {
			t.Fatal(err)
		}
		e, err := sched.NewExplorer(ctx, b.Client, tg, action.DefaultModel())
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		sys := search.System[sched.Choice, action.Action](sched.System{Explorer: e})
		rng := mrand.New(mrand.NewPCG(1, 2))
		random := func(d search.Decision[sched.Choice]) (int, bool) {
			return rng.IntN(len(d.Enabled)), true
		}
		first := func(search.Decision[sched.Choice]) (int, bool) { return 0, true }
		canonical := func(r *search.Run[action.Action]) search.Fingerprint {
			fp, _, ok := r.Data.(*sched.Schedule).Canonical()
			if !ok {
				t.Fatalf("%s: no state", tg.Name)
			}
			return fp
		}
		for i := range walks + 1 {
			r, err := search.Replay(ctx, sys, nil, random)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				continue // the server learns the scripts
			}
			var plan []action.Action
			for _, a := range r.Path {
				plan = append(plan, mirror(a))
			}
			m, err := search.Replay(ctx, sys, plan, first)
			if err != nil {
				t.Fatalf("%s: the mirror of %v: %v", tg.Name, r.Path, err)
			}
			if canonical(r) != canonical(m) {
				t.Errorf("%s: %v and its mirror end in states named apart", tg.Name, r.Path)
			}
		}
	}
}
