package faults

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/lockmarket/lockmarket/internal/failure/history"
	"github.com/lockmarket/lockmarket/internal/timeline"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
)

// Lanes of a traced pause trial.
const (
	laneAlice = "A alice"
	laneBob   = "B bob"
)

// ErrNotTraceable is returned by Trace for a fault it cannot record.
var ErrNotTraceable = errors.New("faults: only the pause faults are traced")

// Traceable lists the faults Trace records.
func Traceable() []Fault { return []Fault{Pause, PauseProcess} }

// Trace runs one trial of a pause fault under variant v on a private
// redis-server, recording what alice and bob did and when (for
// PauseProcess alice records in her own process and hands her steps over
// at the end), and returns the timeline, ending with the checkers'
// findings, and the trial's result.
func Trace(ctx context.Context, f Fault, v Variant, cfg Config) (timeline.Timeline, Result, error) {
	cfg = cfg.withDefaults()
	if f != Pause && f != PauseProcess {
		return timeline.Timeline{}, Result{}, fmt.Errorf("%w: %s", ErrNotTraceable, f)
	}
	if !slices.Contains(f.Variants(), v) {
		return timeline.Timeline{}, Result{}, fmt.Errorf("%w: %s does not run under %s", ErrConfig, v, f)
	}
	var tl timeline.Timeline
	cfg.Trials = 1
	res, err := runPause(ctx, f, v, cfg, &tl)
	return tl, res, err
}

// finishTrace adds the checkers' findings of a trial to rec and finishes
// its timeline.
func finishTrace(rec *timeline.Recorder, f Fault, v Variant, hist history.Report, audit market.Report, counted market.Violations) timeline.Timeline {
	n := counted.Total() + hist.Anomalies.Total()
	for _, d := range hist.Details {
		rec.Finding(true, "history: %s", d)
	}
	if counted.Total() > 0 {
		for _, d := range audit.Details {
			rec.Finding(true, "audit: %s", d)
		}
	}
	verdict := "No violation: the audit and the history checker find the relic sold once."
	if n == 0 {
		rec.Finding(false, "no violation: audit and history clean")
	} else {
		verdict = fmt.Sprintf("Broken: the checkers found %d violations.", n)
	}
	return rec.Finish(fmt.Sprintf("fault %s", f), string(v), verdict, n)
}

// describe says in a few words what an operation's error means.
func describe(err error) string {
	var r reportedErr
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &r):
		return r.description
	case errors.Is(err, locking.ErrLockLost):
		return "refused: its lock was lost before the commit"
	case errors.Is(err, market.ErrContended):
		return "gave up: contended"
	case errors.Is(err, market.ErrListingNotFound):
		return "refused: the listing is gone"
	}
	return err.Error()
}

// reportedErr is an operation's error as a client process reported it:
// its text, its description (describe) and its outcome, made in the
// process, where the error's type was known.
type reportedErr struct {
	text, description string
	outcome           history.Outcome
	reason            history.Reason
}

func (e reportedErr) Error() string { return e.text }
