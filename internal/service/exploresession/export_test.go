package exploresession

import (
	"context"
	"slices"
	"time"

	"github.com/lockmarket/lockmarket/internal/service/api"
)

// JudgeSpent searches the continuations of the steps session id has
// taken as its find would, on a server of its own, but with the search's
// budget spent the moment the search of what the lock promises has ended:
// the end the budget's timer gives a search whose first part took all of
// it, reached by the order of events, not by a clock. It returns the
// search's answer.
func (m *Manager) JudgeSpent(ctx context.Context, id string) (api.FindStatus, error) {
	s, err := m.store.Get(id)
	if err != nil {
		return api.FindStatus{}, err
	}
	s.mu.Lock()
	prefix := slices.Clone(s.actions)
	before := s.frames[len(prefix)].Violations
	req := s.req
	s.mu.Unlock()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	js, err := m.searches.runner(ctx, req)
	if err != nil {
		return api.FindStatus{}, err
	}
	defer js.Close()
	spend := func() time.Duration {
		cancel(errBudgetSpent)
		return m.cfg.FindBudget
	}
	var jd judgement
	err = js.guardWithin(ctx, searchLimits(&m.cfg), "the search", func(ctx context.Context) error {
		var err error
		jd, err = js.judge(ctx, prefix, before, m.cfg.MaxFindBudget, spend, func(int) {})
		return err
	})
	var fs api.FindStatus
	answer(&fs, jd, err, context.Cause(ctx), m.cfg.FindBudget, m.cfg.MaxFindBudget)
	return fs, nil
}
