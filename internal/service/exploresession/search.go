package exploresession

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/service/api"
)

// A room's searches are shared: a search is named by what it searches
// (the session's request, the model and the steps searched from), and
// every session that asks for the same one follows the one search,
// running or waiting, or gets its kept answer at once. A search runs on a
// server of its own (an embedded miniredis, or a sandbox for pasted Lua),
// not on a session's, so that it outlives the session that asked first;
// it is cancelled when the last session following it lets go. Searches
// wait for one of Config.Searches CPUs in a queue, first come first
// served, each follower told its place and an estimate of the wait.

// Defaults of the shared searches.
const (
	// DefaultMaxFindBudget bounds a search however many sessions follow
	// it: each address that follows it adds FindBudget, up to this.
	DefaultMaxFindBudget = 5 * time.Minute
	// DefaultKeptSearches is how many ended searches' answers are kept
	// (the least recently asked for go first). An answer is its result:
	// the counts, and a counterexample of a few dozen actions at most.
	DefaultKeptSearches = 500
)

// errBudgetSpent ends a search at its budget; errLetGo when no session
// follows it any more.
var (
	errBudgetSpent = errors.New("exploresession: the search's budget is spent")
	errLetGo       = errors.New("exploresession: no session follows the search")
)

// search is one search for a counterexample, shared by the sessions that
// follow it. Its fields after the first five are guarded by searches.mu.
type search struct {
	key    string
	req    api.ExploreRequest
	prefix []action.Action
	// before is what the last of prefix's frames broke already.
	before []result.Violation
	done   chan struct{}
	cancel context.CancelCauseFunc
	// started is closed when it gets a CPU.
	started chan struct{}

	status    api.FindStatus // State, Waiting, Schedules and the answer
	followers int
	// addrs is the addresses of the sessions that followed it: each adds
	// to its budget once, however many sessions it opens.
	addrs map[string]bool
	start time.Time // when it got a CPU
	timer *time.Timer
	ended bool
}

// searches is the Manager's queue of searches and its kept answers.
type searches struct {
	cfg *Config
	// runner opens a server and an explorer of req's target, for a
	// search of its own.
	runner func(ctx context.Context, req api.ExploreRequest) (*session, error)
	stats  *stats

	mu      sync.Mutex
	closed  bool
	running int
	queue   []*search          // waiting for a CPU, oldest first
	live    map[string]*search // waiting or running, by key
	kept    map[string]*list.Element
	order   *list.List // of *search, most recently asked for first
	// took is the durations of the last searches that ran, for the
	// estimate of a wait.
	took []time.Duration
	wg   sync.WaitGroup
}

func newSearches(cfg *Config, st *stats, runner func(context.Context, api.ExploreRequest) (*session, error)) *searches {
	return &searches{cfg: cfg, runner: runner, stats: st, live: map[string]*search{},
		kept: map[string]*list.Element{}, order: list.New()}
}

// searchKey names the search of prefix on the target of req under model.
func searchKey(req api.ExploreRequest, model string, prefix []action.Action) string {
	if len(prefix) == 0 {
		prefix = nil // from the start, whatever steps the session took since
	}
	if req.Recipe != nil {
		// fencing and fixed are one fix for a recipe
		req.Fixed, req.Fencing = req.Fixed || req.Fencing, false
	}
	b, err := json.Marshal(struct {
		Req    api.ExploreRequest
		Model  string
		Prefix []action.Action
	}{req, model, prefix})
	if err != nil {
		panic(err) // plain data
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// join makes the caller a follower of the search key names: the one
// running or waiting, the kept answer, or a new search queued for prefix
// on req's target.
// kept says it is a kept answer.
func (q *searches) join(key, client string, req api.ExploreRequest, prefix []action.Action,
	before []result.Violation) (sr *search, kept bool, err error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return nil, false, api.ErrClosed
	}
	if sr := q.live[key]; sr != nil {
		sr.followers++
		if !sr.addrs[client] {
			sr.addrs[client] = true
			q.extendLocked(sr)
		}
		return sr, false, nil
	}
	if el, ok := q.kept[key]; ok {
		q.order.MoveToFront(el)
		return el.Value.(*search), true, nil
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	sr = &search{key: key, req: req, prefix: prefix, before: before, done: make(chan struct{}), cancel: cancel,
		started: make(chan struct{}), followers: 1, addrs: map[string]bool{client: true},
		status: api.FindStatus{State: api.StateRunning, FromStep: len(prefix), Waiting: true}}
	q.live[key] = sr
	q.queue = append(q.queue, sr)
	q.wg.Add(1)
	go func() {
		defer q.wg.Done()
		q.run(ctx, sr)
	}()
	q.scheduleLocked()
	return sr, false, nil
}

// budgetLocked is sr's budget: FindBudget for each address that followed
// it, at most MaxFindBudget.
func (q *searches) budgetLocked(sr *search) time.Duration {
	return min(time.Duration(len(sr.addrs))*q.cfg.FindBudget, q.cfg.MaxFindBudget)
}

// extendLocked moves a running search's end to its new budget.
func (q *searches) extendLocked(sr *search) {
	if sr.timer != nil && sr.timer.Stop() {
		sr.timer.Reset(time.Until(sr.start.Add(q.budgetLocked(sr))))
	}
}

// searchLimits bound a search on a sandbox: its wall time by the most
// any search is given (the queue's timer ends it at its own budget), each
// of its scripts by a step's budget of CPU time.
func searchLimits(cfg *Config) limits {
	return limits{wall: cfg.MaxFindBudget + cfg.StepBudget, script: cfg.StepBudget}
}

// scheduleLocked lets the oldest waiting searches run while CPUs are free.
func (q *searches) scheduleLocked() {
	for q.running < q.cfg.Searches && len(q.queue) > 0 {
		sr := q.queue[0]
		q.queue = q.queue[1:]
		q.running++
		sr.status.Waiting = false
		sr.start = time.Now()
		sr.timer = time.AfterFunc(q.budgetLocked(sr), func() { sr.cancel(errBudgetSpent) })
		close(sr.started)
	}
}

// leave lets go of sr for one follower: the last one's going cancels it
// (and waits for it to stop) unless it has ended.
func (q *searches) leave(sr *search) {
	q.mu.Lock()
	if sr.ended || sr.followers == 0 {
		q.mu.Unlock()
		return
	}
	sr.followers--
	last := sr.followers == 0
	q.mu.Unlock()
	if last {
		sr.cancel(errLetGo)
		<-sr.done
	}
}

// run waits for sr's turn, searches on a server of its own, and leaves
// the answer in sr.status; it keeps a final answer.
func (q *searches) run(ctx context.Context, sr *search) {
	defer close(sr.done)
	defer sr.cancel(nil)
	var jd judgement
	err := func() error {
		select {
		case <-sr.started:
		case <-ctx.Done():
			return ctx.Err()
		}
		s, err := q.runner(ctx, sr.req)
		if err != nil {
			return err
		}
		defer s.Close()
		return s.guardWithin(ctx, searchLimits(q.cfg), "the search", func(ctx context.Context) error {
			left := func() time.Duration {
				q.mu.Lock()
				defer q.mu.Unlock()
				return q.budgetLocked(sr) - time.Since(sr.start)
			}
			var err error
			jd, err = s.judge(ctx, sr.prefix, sr.before, q.cfg.MaxFindBudget, left, func(n int) {
				q.mu.Lock()
				sr.status.Schedules = n
				q.mu.Unlock()
			})
			return err
		})
	}()
	cause := context.Cause(ctx)

	q.mu.Lock()
	defer q.mu.Unlock()
	sr.ended = true
	delete(q.live, sr.key)
	if sr.timer != nil {
		sr.timer.Stop()
		q.running--
		elapsed := time.Since(sr.start)
		q.took = append(q.took, elapsed)
		if len(q.took) > 16 {
			q.took = q.took[1:]
		}
		sr.status.ElapsedMS = ms(elapsed)
	} else if i := indexOf(q.queue, sr); i >= 0 {
		q.queue = append(q.queue[:i], q.queue[i+1:]...)
	}
	q.scheduleLocked()
	fs := &sr.status
	fs.Waiting = false
	fs.BudgetMS = q.budgetLocked(sr).Milliseconds()
	answered, keep := answer(fs, jd, err, cause, q.budgetLocked(sr), q.cfg.MaxFindBudget)
	if !answered {
		return
	}
	q.stats.searched(fs.State == api.FindFound || jd.unpromised != nil && jd.unpromised.Counterexample() != nil)
	if keep {
		q.keepLocked(sr)
	}
}

// answer fills fs with the end of a search: jd and err as its judge
// returned them, cause why its context ended (nil when it did not),
// budget its budget, most the most any search is given. answered is
// false for a search cancelled or failed, which has no answer; keep says
// the answer is final, worth keeping for the sessions that ask again.
func answer(fs *api.FindStatus, jd judgement, err, cause error, budget, most time.Duration) (answered, keep bool) {
	res := jd.res
	switch {
	case res != nil && res.Counterexample() != nil:
		fs.State, keep = api.FindFound, true
	case errors.Is(cause, errLetGo) || errors.Is(cause, errClosing):
		fs.State = api.StateCancelled
		return false, false
	case errors.Is(cause, errBudgetSpent):
		fs.State = api.FindNone
		fs.Note = jd.cutNote(budget.Round(time.Second))
	case err != nil:
		fs.State, fs.Error = api.StateFailed, bounded(strings.TrimPrefix(scriptStopped(err).Error(),
			api.ErrInvalid.Error()+": "))
		return false, false
	case res == nil: // every property checked as a promise broke in the prefix
		fs.State, keep = api.FindNone, true
	case res.Stopped != "":
		fs.State = api.FindNone
		fs.Note = jd.cutNote(most.Round(time.Second))
	default:
		fs.State, keep = api.FindNone, true
	}
	if jd.note != "" && fs.Note == "" {
		fs.Note = jd.note
	}
	fs.Result, fs.Unpromised, fs.Properties = res, jd.unpromised, jd.props
	fs.Schedules = 0
	for _, r := range []*result.Result{res, jd.unpromised} {
		if r != nil {
			fs.Schedules += r.Schedules
		}
	}
	return true, keep
}

// keepLocked keeps sr's answer, dropping the least recently asked for
// beyond the bound.
func (q *searches) keepLocked(sr *search) {
	if q.cfg.KeptSearches < 0 {
		return
	}
	q.kept[sr.key] = q.order.PushFront(sr)
	for q.order.Len() > q.cfg.KeptSearches {
		old := q.order.Remove(q.order.Back()).(*search)
		delete(q.kept, old.key)
	}
}

// Kept is how many ended searches' answers the Manager keeps.
func (m *Manager) Kept() int {
	m.searches.mu.Lock()
	defer m.searches.mu.Unlock()
	return m.searches.order.Len()
}

func indexOf(q []*search, sr *search) int {
	for i, x := range q {
		if x == sr {
			return i
		}
	}
	return -1
}

// errClosing ends the searches when the Manager closes.
var errClosing = errors.New("exploresession: closing")

// close cancels every search and waits for them.
func (q *searches) close() {
	q.mu.Lock()
	q.closed = true
	all := make([]*search, 0, len(q.live))
	for _, sr := range q.live {
		all = append(all, sr)
	}
	q.mu.Unlock()
	for _, sr := range all {
		sr.cancel(errClosing)
	}
	q.wg.Wait()
}

// statusFor is sr's status as a follower reads it: its place in the
// queue and the estimated wait while it waits, how many sessions follow
// it, whether the answer was kept from before.
func (q *searches) statusFor(sr *search, kept bool) api.FindStatus {
	q.mu.Lock()
	defer q.mu.Unlock()
	fs := sr.status
	fs.Following = sr.followers
	fs.Kept = kept
	if sr.ended {
		return fs
	}
	fs.BudgetMS = q.budgetLocked(sr).Milliseconds()
	if !fs.Waiting {
		fs.ElapsedMS = ms(time.Since(sr.start))
		return fs
	}
	i := indexOf(q.queue, sr)
	fs.QueuePosition = i + 1
	fs.WaitEstimateMS, fs.WaitMostMS = q.waitLocked(i)
	return fs
}

// waitLocked is how long the search at place i of the queue waits for a
// CPU: about (est), each search running or waiting before it taking as
// long as the last ones took on average (one that ran longer already:
// about as long again), within its budget; and at most (most), each
// taking the most any search may (MaxFindBudget: a budget grows with the
// addresses that follow a search).
func (q *searches) waitLocked(i int) (est, most int64) {
	typical := q.cfg.FindBudget
	if len(q.took) > 0 {
		var sum time.Duration
		for _, d := range q.took {
			sum += d
		}
		typical = sum / time.Duration(len(q.took))
	}
	// each CPU's time until it is free, then the searches before i take
	// the first free one
	free, bound := make([]time.Duration, q.cfg.Searches), make([]time.Duration, q.cfg.Searches)
	k := 0
	for _, sr := range q.live {
		if sr.status.Waiting || sr.ended || k >= len(free) {
			continue
		}
		ran := time.Since(sr.start)
		rest := typical - ran
		if rest <= 0 {
			rest = typical // past the average: about another one
		}
		free[k] = max(min(rest, q.budgetLocked(sr)-ran), 0)
		bound[k] = max(q.cfg.MaxFindBudget-ran, 0)
		k++
	}
	for _, sr := range q.queue[:i] {
		j := slices.Index(free, slices.Min(free))
		free[j] += min(typical, q.budgetLocked(sr))
		j = slices.Index(bound, slices.Min(bound))
		bound[j] += q.cfg.MaxFindBudget
	}
	return slices.Min(free).Milliseconds(), slices.Min(bound).Milliseconds()
}
