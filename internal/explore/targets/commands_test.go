package targets

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/search"
	"github.com/lockmarket/lockmarket/internal/redis/rediscmd"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// unknownCommands is the explorer as the search sees it, noting each
// command its clients sent that the table of commands does not know
// (rediscmd.Known): the state cache is off for a schedule that sends one.
type unknownCommands struct {
	sched.System
	mu      *sync.Mutex
	unknown map[string]bool
	sent    *int
}

func (u unknownCommands) Run(
	ctx context.Context,
	choose search.Chooser[sched.Choice],
) (search.Outcome, error) {
	out, err := u.System.Run(ctx, choose)
	s, ok := out.Data.(*sched.Schedule)
	if !ok {
		return out, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, r := range s.CmdLog {
		for _, args := range r.Args {
			*u.sent++
			if !rediscmd.Known(args) {
				u.unknown[strings.ToUpper(strings.Join(args[:min(2, len(args))], " "))] = true
			}
		}
	}
	return out, err
}

// TestTargetsSendKnownCommands runs random schedules of the market under
// each strategy (fenced too) and of every recipe and its fix, and fails on
// any command their clients send that the table of commands does not know:
// such a command would turn the state cache off for its schedule.
func TestTargetsSendKnownCommands(t *testing.T) {
	b := redistest.Real(t)
	ctx := context.Background()
	var tgs []*sched.Target
	for _, s := range market.Strategies {
		for _, fencing := range []bool{false, true} {
			if fencing && s != market.Coarse && s != market.Fine {
				continue
			}
			tg, err := Strategy(s, fencing)
			if err != nil {
				t.Fatal(err)
			}
			tgs = append(tgs, tg)
		}
	}
	for _, id := range Recipes() {
		for _, fixed := range []bool{false, true} {
			tg, err := Recipe(id, fixed)
			if err != nil {
				t.Fatal(err)
			}
			tgs = append(tgs, tg)
		}
	}
	walks := 12
	if testing.Short() {
		walks = 4
	}
	for _, tg := range tgs {
		name := tg.Name
		t.Run(tg.Name, func(t *testing.T) {
			m := action.DefaultModel()
			m.Clients = max(2, min(tg.Clients, 3))
			e, err := sched.NewExplorer(ctx, b.Client, tg, m)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			unknown, sent := map[string]bool{}, 0
			sys := unknownCommands{System: sched.System{Explorer: e}, mu: &sync.Mutex{},
				unknown: unknown, sent: &sent}
			s := search.New(
				[]search.System[sched.Choice, action.Action]{sys},
				search.Options[action.Action]{Less: action.CompareAction},
			)
			if err := s.Walk(ctx, 1, walks); err != nil {
				t.Fatal(err)
			}
			if sent == 0 {
				t.Fatalf("%s: no command sent in %d schedules", name, walks)
			}
			if len(unknown) > 0 {
				t.Errorf("%s sends commands the table does not know: %v", name, unknown)
			}
		})
	}
}
