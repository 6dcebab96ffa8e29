package faults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/failure/history"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/sim/workload"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
)

// Suffixes of the failover-market variants: WaitSuffix, each purchase is
// followed by WAIT 1 (it counts as acknowledged only once the replica has
// it); KeySuffix, each purchase carries an idempotency key (market.OpID,
// the Idempotency-Key of the HTTP API). In that order: "fine+wait+key".
const (
	WaitSuffix = "+wait"
	KeySuffix  = "+key"
)

// The market failover trials: fmBuyers buyers buy, each on a connection
// of its own and at most one purchase every fmPace or so, from fmSellers
// sellers' listings (enough for the whole run, listed at set-up and
// replicated before it) on a primary with one replica.
// Halfway through cfg.Duration the replica stops receiving (it is
// SIGSTOPped and the primary drops its link, as in failover-nolink): it
// lags. Once cfg.Pause has passed since and at least one purchase has
// committed meanwhile (or no buyer is buying any more), the primary is
// killed and the replica promoted.
//
// A buyer whose purchase's outcome is unknown (its reply lost, or, with
// WAIT, not acknowledged by the replica in time) stops buying, waits for
// the promotion and retries the purchase against the new primary until it
// is answered (as a resolver does, within retryFor): with the same key
// under "+key"; without one otherwise
// (keys off: the client asks again for the same listing). On the promoted
// server, which has no replica left, an answer is final.
//
// The promoted server's receipts (market.Keys.Sales) then say what
// survived: an acknowledged purchase without its receipt was lost; a
// receipt that no purchase accounts for was applied twice.
const (
	fmSellers  = 3
	fmBuyers   = 6
	fmPace     = 20 * time.Millisecond
	fmFunds    = 1_000_000
	fmMaxPrice = 100
	// fmWaitTimeout bounds each WAIT for the replica's acknowledgement.
	fmWaitTimeout = time.Second
)

// failoverMarketVariants are the variants of the failover-market fault:
// every strategy, without and with WAIT, without and with keys.
func failoverMarketVariants() []Variant {
	var out []Variant
	for _, s := range market.Strategies {
		for _, wait := range []string{"", WaitSuffix} {
			for _, key := range []string{"", KeySuffix} {
				out = append(out, Variant(string(s)+wait+key))
			}
		}
	}
	return out
}

// fmStrategy splits a failover-market variant into its strategy, WAIT and
// keys.
func (v Variant) fmStrategy() (s market.Strategy, wait, keys bool, err error) {
	name, keys := strings.CutSuffix(string(v), KeySuffix)
	name, wait = strings.CutSuffix(name, WaitSuffix)
	s, err = market.ParseStrategy(name)
	return s, wait, keys, err
}

// fmTrial is the shared state of one failover-market trial.
type fmTrial struct {
	cfg      Config
	name     string
	strategy market.Strategy
	keys     bool // operation IDs on
	wait     bool // WAIT 1 after each purchase

	lagging   atomic.Bool  // the replica stopped receiving
	committed atomic.Int64 // purchases committed since it did
	buying    atomic.Int64 // buyers still buying on the primary
	stop      chan struct{}
	promoted  chan struct{}
	newAddr   string // the promoted server, once promoted is closed
	rs        resolver
	rec       *history.Recorder
}

func runFailoverMarket(ctx context.Context, v Variant, cfg Config) (Result, error) {
	s, wait, keys, err := v.fmStrategy()
	if err != nil {
		return Result{}, err
	}
	res := Result{Fault: FailoverMarket, Variant: v}
	for trial := range cfg.Trials {
		t := &fmTrial{cfg: cfg, name: marketName(FailoverMarket, trial), strategy: s, keys: keys, wait: wait,
			stop: make(chan struct{}), promoted: make(chan struct{}), rec: history.NewRecorder()}
		if err := t.run(ctx, trial, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// items is how many items each seller lists at set-up: more than the
// buyers can buy at their pace until the failover.
func (t *fmTrial) items() int {
	run := t.cfg.Duration/2 + t.cfg.Pause + time.Second
	perSeller := float64(fmBuyers) * run.Seconds() / (fmPace / 2).Seconds() / fmSellers
	return 10 + int(perSeller)
}

// options are the market options of every client of the trial.
func (t *fmTrial) options() []market.Option {
	return []market.Option{market.WithLockTTL(t.cfg.LockTTL), market.WithTimeouts(2*time.Second, 3*time.Second)}
}

func (t *fmTrial) run(ctx context.Context, trial int, res *Result) error {
	primary, replica, err := startPair(ctx)
	if err != nil {
		return err
	}
	defer primary.Stop()
	defer replica.Stop()
	if err := t.setUp(ctx, primary.Addr()); err != nil {
		return err
	}
	// Each buyer has one connection, so that WAIT follows the purchase on
	// the connection that made it, and no retries by the client library
	// (a lost reply is an unknown outcome, not a resent command).
	var wg sync.WaitGroup
	errs := make([]error, fmBuyers)
	t.buying.Store(fmBuyers)
	for i := range fmBuyers {
		wg.Go(func() { errs[i] = t.buyer(ctx, primary.Addr(), trial, i) })
	}
	ferr := t.failover(ctx, primary, replica)
	if ferr != nil {
		// Stop the buyers; those waiting for a promotion give up.
		if !isClosed(t.stop) {
			close(t.stop)
		}
		if !isClosed(t.promoted) {
			close(t.promoted)
		}
	}
	wg.Wait()
	if err := errors.Join(append(errs, ferr)...); err != nil {
		return err
	}
	// Let commands a closed connection left in the server's input buffer
	// run before the final state is read.
	time.Sleep(50 * time.Millisecond)
	return t.check(ctx, replica.Addr(), trial, res)
}

// setUp creates the users and listings on the primary and waits until the
// replica has them.
func (t *fmTrial) setUp(ctx context.Context, addr string) error {
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 1, MaxRetries: -1})
	defer c.Close()
	m, err := market.New(c, t.name, t.options()...)
	if err != nil {
		return err
	}
	funds := map[string]int64{}
	for i := range fmSellers {
		funds[fmt.Sprintf("s%d", i)] = 0
	}
	for i := range fmBuyers {
		funds[fmt.Sprintf("b%d", i)] = fmFunds
	}
	if _, err := populate(ctx, m, funds, nil); err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(t.cfg.Seed, 0xfa11))
	for i := range fmSellers {
		seller := fmt.Sprintf("s%d", i)
		items := make([]string, t.items())
		prices := make([]int64, len(items))
		for j := range items {
			items[j] = fmt.Sprintf("s%d-it%04d", i, j)
			prices[j] = 1 + rng.Int64N(fmMaxPrice)
		}
		if err := m.CreateListings(ctx, seller, items, prices); err != nil {
			return fmt.Errorf("set-up listings: %w", err)
		}
	}
	n, err := c.Wait(ctx, 1, 5*time.Second).Result()
	if err != nil || n < 1 {
		return fmt.Errorf("set-up not acknowledged by the replica (%d, %v)", n, err)
	}
	return nil
}

// failover lets the buyers run, makes the replica lag, and once a purchase
// has committed on the primary alone, kills the primary and promotes the
// replica.
func (t *fmTrial) failover(ctx context.Context, primary, replica *redisserver.Server) error {
	if err := (locking.RealClock{}).Sleep(ctx, t.cfg.Duration/2); err != nil {
		return err
	}
	// Stopping the replica is not enough (the kernel would buffer the
	// stream and hand it over on SIGCONT): the primary drops the link too,
	// and the stopped replica cannot reconnect.
	if err := replica.Signal(syscall.SIGSTOP); err != nil {
		return err
	}
	admin := checkClient(primary.Addr())
	err := admin.ClientKillByFilter(ctx, "TYPE", "replica").Err()
	admin.Close()
	if err != nil {
		replica.Signal(syscall.SIGCONT)
		return fmt.Errorf("drop the replica link: %w", err)
	}
	t.lagging.Store(true)
	cut := time.Now()
	for time.Since(cut) < t.cfg.Pause || t.committed.Load() == 0 && t.buying.Load() > 0 {
		if err := (locking.RealClock{}).Sleep(ctx, 5*time.Millisecond); err != nil {
			replica.Signal(syscall.SIGCONT)
			return err
		}
	}
	// Killed first, then the buyers told to stop: purchases in flight
	// lose their replies.
	primary.Kill()
	close(t.stop)
	if err := replica.Signal(syscall.SIGCONT); err != nil {
		return err
	}
	promoted := checkClient(replica.Addr())
	defer promoted.Close()
	if err := promoted.ReplicaOf(ctx, "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("promote replica: %w", err)
	}
	t.newAddr = replica.Addr()
	close(t.promoted)
	return nil
}

// buyer buys listings on the primary until the failover; a purchase of
// unknown outcome it resolves on the promoted server, and stops.
func (t *fmTrial) buyer(ctx context.Context, addr string, trial, i int) error {
	buyer := fmt.Sprintf("b%d", i)
	stopped := sync.OnceFunc(func() { t.buying.Add(-1) })
	defer stopped()
	c := faultClient(addr, t.cfg, 1)
	defer c.Close()
	m, err := market.New(c, t.name, t.options()...)
	if err != nil {
		return err
	}
	r := rand.New(rand.NewPCG(t.cfg.Seed, uint64(trial)<<8|uint64(i+1)))
	for n := 0; !workload.Requested(t.stop); n++ {
		ls, _, err := m.Listings(ctx, 0, 10)
		if err != nil || len(ls) == 0 {
			workload.Pause(retryPause, t.stop)
			continue
		}
		l := ls[r.IntN(len(ls))]
		var opts []market.OpOption
		if t.keys {
			opts = append(opts, market.OpID(opID(i, n)))
		}
		op := t.rec.Invoke(i, history.Purchase, buyer, l.Seller, l.Item, l.Price)
		err = t.attempt(ctx, c, m, buyer, l, opts)
		if unknown(err) {
			stopped()
			op.Complete(t.resolve(ctx, op, buyer, l, opts, err))
			return nil
		}
		op.Complete(err)
		workload.Pause(fmPace/2+time.Duration(r.Int64N(int64(fmPace))), t.stop)
	}
	return nil
}

// resolve waits for the promotion and retries buyer's purchase of l, whose
// attempt ended with err (outcome unknown), on the promoted server until
// it is answered: with its operation ID if it has one (opts), else as a
// new purchase of the same listing. It returns the last answer.
func (t *fmTrial) resolve(ctx context.Context, op *history.Pending, buyer string, l market.Listing, opts []market.OpOption, err error) error {
	<-t.promoted
	if t.newAddr == "" { // the failover failed; the trial reports why
		return err
	}
	c := faultClient(t.newAddr, t.cfg, 1)
	defer c.Close()
	m, merr := market.New(c, t.name, t.options()...)
	if merr != nil {
		return merr
	}
	return t.rs.retry(ctx, op, err, func() error {
		_, err := m.Purchase(ctx, t.strategy, buyer, l.Seller, l.Item, l.Price, opts...)
		return err
	})
}

// attempt makes buyer's purchase of l on the primary: nil when it was
// acknowledged (with WAIT: and the replica has it), a refusal, or an
// error of unknown outcome (errNotReplicated when WAIT was not
// acknowledged in time).
func (t *fmTrial) attempt(ctx context.Context, c *redis.Client, m *market.Market, buyer string, l market.Listing, opts []market.OpOption) error {
	_, err := m.Purchase(ctx, t.strategy, buyer, l.Seller, l.Item, l.Price, opts...)
	if err != nil {
		return err
	}
	if t.lagging.Load() {
		t.committed.Add(1)
	}
	if !t.wait {
		return nil
	}
	n, err := c.Wait(ctx, 1, fmWaitTimeout).Result()
	if err != nil {
		return fmt.Errorf("%w: %w", errNotReplicated, err)
	}
	if n < 1 {
		return errNotReplicated
	}
	return nil
}

// errNotReplicated is the outcome of a committed purchase that the replica
// did not acknowledge in time: a failover may or may not keep it.
var errNotReplicated = errors.New("faults: WAIT: not acknowledged by the replica")

// check reads the promoted server's receipts and audits its state.
func (t *fmTrial) check(ctx context.Context, addr string, trial int, res *Result) error {
	c := checkClient(addr)
	defer c.Close()
	receipts, err := history.ReadSales(ctx, c, t.name)
	if err != nil {
		return err
	}
	m, err := market.New(c, t.name)
	if err != nil {
		return err
	}
	audit, err := m.Audit(ctx)
	if err != nil {
		return err
	}
	sales := history.CheckSales(t.rec.Ops(), receipts)
	res.Trials++
	res.Counts.Attempted += sales.Attempted
	res.Counts.Ok += sales.Ok
	res.Counts.Failed += sales.Failed
	res.Counts.Unknown += sales.Unknown
	res.Lost += sales.Lost
	res.Duplicated += sales.Duplicated
	res.RefusedApplied += sales.RefusedApplied
	res.Audit.Add(audit.Violations)
	t.rs.add(res)
	for _, d := range sales.Details {
		res.note("trial %d: %s", trial, d)
	}
	for _, d := range audit.Details {
		res.note("trial %d: audit: %s", trial, d)
	}
	fmt.Fprintf(t.cfg.Log, "%s %s trial %d: %d purchases (%d ok, %d failed, %d unknown; %d retried, %d resolved), "+
		"%d receipts: %d lost, %d duplicated, %d refused though applied; audit %d\n",
		res.Fault, res.Variant, trial, sales.Attempted, sales.Ok, sales.Failed, sales.Unknown,
		t.rs.retried.Load(), t.rs.resolved.Load(), sales.Receipts, sales.Lost, sales.Duplicated, sales.RefusedApplied, audit.Total())
	return nil
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
