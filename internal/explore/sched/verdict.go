package sched

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
)

// errBudget is the cause of a search's context once its budget ran out.
var errBudget = errors.New("explore: the search's budget ran out")

// ReplayTries is how many times a counterexample is replayed on a fresh
// server before it is reported as unsteady.
const ReplayTries = 2

// finishBound is how long shortening and replaying what a stopped search
// found may take, once its context has ended (its budget, an interrupt):
// a third of it for the shortening, the rest for the replays.
var finishBound = 4 * time.Second

// finishReserve is the part of a budget kept for shortening and
// replaying what the search found: a fifth of it, at most finishBound.
// The search itself stops that much before the budget, so that the whole
// of it, report included, ends within the budget.
func finishReserve(budget time.Duration) time.Duration {
	return min(finishBound, budget/5)
}

// SearchContext is the context a search runs under: ctx, ended by the
// budget too when there is one (less its finishReserve).
func SearchContext(
	ctx context.Context,
	budget time.Duration,
) (context.Context, context.CancelFunc) {
	if budget <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, budget-finishReserve(budget), errBudget)
}

// StopReason says why a search whose run ended with err stopped before it
// was through: "" when it was not cut (err is then the search's own).
func StopReason(search context.Context, err error) string {
	switch {
	case err == nil || search.Err() == nil:
		return ""
	case errors.Is(context.Cause(search), errBudget):
		return result.StoppedBudget
	}
	return result.StoppedInterrupted
}

// finishContext is the context what a search found is shortened and
// replayed under: it does not end with search, but bound after search
// ends (at once if it has already). stop releases it.
func finishContext(search context.Context, bound time.Duration) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(search))
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-search.Done():
		case <-done:
			return
		}
		t := time.NewTimer(bound)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-done:
		}
	})
	return ctx, func() {
		close(done)
		wg.Wait()
		cancel()
	}
}

// conclude ends a search whose run returned err: a search cut by its
// budget or its context (search) is a partial result, not an error.
// Each counterexample found (one per property, in the order of
// Properties) is shortened by shrink (unless it is nil) and replayed on
// a fresh server: those that break their property again are the result's
// Violations; the others, replayed again and still not broken, its
// Unsteady.
func (e *Explorer) conclude(
	search context.Context, res *result.Result, found []result.Counterexample, err error,
	shrink func(context.Context, result.Counterexample) (result.Counterexample, error), start time.Time,
) (*result.Result, error) {
	defer func() { res.Elapsed = time.Since(start) }()
	if res.Stopped = StopReason(search, err); res.Stopped != "" {
		res.Exhaustive, err = false, nil
	}
	if err != nil {
		return res, err
	}
	bound := finishBound
	if res.Stopped == result.StoppedBudget {
		bound = max(finishReserve(res.Budget), time.Second) // a replay needs a server
	}
	ctx, stop := finishContext(search, bound)
	defer stop()
	for _, g := range found {
		if shrink != nil {
			sctx, cancel := ctx, func() {}
			if search.Err() != nil {
				sctx, cancel = context.WithTimeout(ctx, bound/3)
			}
			s, err := shrink(sctx, g)
			cancel()
			switch {
			case err == nil:
				g = s
			case errors.Is(err, ErrNotEnabled) || sctx.Err() != nil:
				// Kept as found: shortening it went another way, or ran
				// out of time.
			default:
				return res, err
			}
		}
		if err := e.confirm(ctx, res, g); err != nil {
			return res, err
		}
	}
	return res, nil
}

// confirm replays f on a fresh server (Reproduce), again when it did not
// break its property, and files it with res's Violations when it did, or
// when its replay could not finish (NotReplayed), else with its
// Unsteady.
func (e *Explorer) confirm(ctx context.Context, res *result.Result, f result.Counterexample) error {
	var rep Reproduction
	for range ReplayTries {
		var err error
		rep, err = e.replayFresh(ctx, f)
		if err != nil && ctx.Err() == nil {
			return err
		}
		if err != nil {
			rep = notReplayed("", fmt.Errorf("the replay was cut short: %w", err))
		}
		if rep.Reproduced || rep.NotReplayed || ctx.Err() != nil {
			break
		}
	}
	f.Reproduced, f.Server = rep.Reproduced, rep.Server
	f.ReplayNote, f.Replay = rep.Note, rep.Timeline
	f.NotReplayed = rep.NotReplayed
	if rep.Reproduced || rep.NotReplayed {
		// A replay that could not finish says nothing against what the
		// search saw: it stays a violation.
		res.Violations = append(res.Violations, f)
	} else {
		res.Unsteady = append(res.Unsteady, f)
	}
	return nil
}

// replayFresh replays f on a private redis-server (Reproduce) or, with
// none on PATH, on the explorer's own server in a fresh namespace.
func (e *Explorer) replayFresh(ctx context.Context, f result.Counterexample) (Reproduction, error) {
	rep, err := reproduce(ctx, e.orig, e.model, f)
	if !errors.Is(err, redisserver.ErrNoBinary) {
		return rep, err
	}
	x, err := NewControlled(ctx, e.base, e.control, e.orig, e.model)
	if err != nil {
		return Reproduction{}, err
	}
	defer x.Close()
	x.Factor = e.Factor
	tl, vs, err := x.Record(ctx, f.Actions)
	switch {
	case errors.Is(err, ErrNotEnabled), errors.Is(err, ErrUnsteady):
		return Reproduction{Note: err.Error()}, nil
	case err != nil:
		return notReplayed("", err), nil
	}
	rep = Reproduction{
		Timeline: tl,
		Note:     "no redis-server on PATH: replayed in a fresh namespace of the explorer's server",
	}
	rep.Reproduced = brokeAgain(vs, f.Property)
	return rep, nil
}
