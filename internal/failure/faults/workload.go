package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"

	"github.com/lockmarket/lockmarket/internal/failure/history"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/sim/workload"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
)

// The workload of the stall, kill and restart faults: wlSellers sellers own
// wlItems items each, of which wlPreListed are listed at set-up; during the
// trial each seller lists the rest one by one (package workload, a short
// wait after each), and wlBuyers buyers repeatedly buy one of the ten
// cheapest listings at its listed price.
const (
	wlSellers   = 3
	wlBuyers    = 4
	wlItems     = 40
	wlPreListed = 10
	wlFunds     = 1_000_000
)

// wlShape is the shape of the workers' load: prices 1 to 100, a wait of 5
// to 20 ms after each listing, and after an operation of unknown outcome
// (its retries, if any, given up) a wait of 10 ms, so that a stalled or
// restarting server is not hammered.
var wlShape = workload.Shape{MinPrice: 1, MaxPrice: 100, Pick: 10,
	ListWaitMin: 5 * time.Millisecond, ListWaitMax: 20 * time.Millisecond,
	EmptyPause: 2 * time.Millisecond, ErrorPause: 10 * time.Millisecond}

func runWorkload(ctx context.Context, f Fault, v Variant, cfg Config) (Result, error) {
	var args []string
	if f == Restart {
		// Keep what was acknowledged across the restart: the question is
		// then whether anything acknowledged is lost or half-applied.
		args = []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	srv, err := startServer(ctx, args...)
	if err != nil {
		return Result{}, err
	}
	defer srv.Stop()
	res := Result{Fault: f, Variant: v}
	for trial := range cfg.Trials {
		if err := workloadTrial(ctx, srv, f, v, cfg, trial, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

func workloadTrial(ctx context.Context, srv *redisserver.Server, f Fault, v Variant, cfg Config, trial int, res *Result) error {
	name := marketName(f, trial)
	c := faultClient(srv.Addr(), cfg, wlSellers+wlBuyers+2)
	defer c.Close()
	opts, s, err := marketOptions(v, cfg, c, market.WithLedger(market.NewLedger()))
	if err != nil {
		return err
	}
	m, err := market.New(c, name, opts...)
	if err != nil {
		return err
	}
	funds := map[string]int64{}
	items := map[string]string{}
	owned := make([][]string, wlSellers)
	for i := range wlSellers {
		seller := fmt.Sprintf("s%d", i)
		funds[seller] = 0
		for j := range wlItems {
			it := fmt.Sprintf("s%d-it%02d", i, j)
			items[it] = seller
			owned[i] = append(owned[i], it)
		}
	}
	for i := range wlBuyers {
		funds[fmt.Sprintf("b%d", i)] = wlFunds
	}
	setup, err := populate(ctx, m, funds, items)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(trial)))
	rec := history.NewRecorder()
	for i := range wlSellers {
		for _, it := range owned[i][:wlPreListed] {
			seller, p := fmt.Sprintf("s%d", i), wlShape.Price(rng)
			op := rec.Invoke(0, history.List, "", seller, it, p)
			if _, err := m.List(ctx, s, seller, it, p); op.Complete(err) != history.Ok {
				return fmt.Errorf("list at set-up: %w", err)
			}
		}
	}

	// Every operation of the workers has an ID; one whose reply was lost
	// is retried with it until answered (rs), so that its outcome is
	// known. The fault is over by the time the workers stop, and retries
	// go on after that.
	var rs resolver
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range wlSellers {
		r := rand.New(rand.NewPCG(cfg.Seed, uint64(trial)<<8|uint64(i+1)))
		o := &recorded{m: m, s: s, user: fmt.Sprintf("s%d", i), worker: 1 + i, rec: rec, rs: &rs, items: owned[i][wlPreListed:]}
		wg.Go(func() { wlShape.List(ctx, o, r, stop) })
	}
	for i := range wlBuyers {
		r := rand.New(rand.NewPCG(cfg.Seed, uint64(trial)<<8|uint64(100+i)))
		o := &recorded{m: m, s: s, user: fmt.Sprintf("b%d", i), worker: 1 + wlSellers + i, rec: rec, rs: &rs}
		wg.Go(func() { wlShape.Buy(ctx, o, r, stop) })
	}
	injectErr := make(chan error, 1)
	go func() {
		workload.Pause(cfg.Duration/4, stop)
		injectErr <- inject(ctx, srv, f, cfg)
	}()
	timer := time.NewTimer(cfg.Duration)
	select {
	case <-timer.C:
	case <-ctx.Done():
	}
	timer.Stop()
	ierr := <-injectErr // the fault is over before the workers stop
	close(stop)
	wg.Wait()
	if ierr != nil {
		return fmt.Errorf("%s: inject: %w", f, ierr)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// Let commands a closed connection left in the server's input buffer
	// run before the final state is read.
	time.Sleep(50 * time.Millisecond)
	hist, audit, err := check(ctx, srv.Addr(), m, setup, rec.Ops())
	if err != nil {
		return err
	}
	counted := res.addTrial(hist, audit)
	rs.add(res)
	fmt.Fprintf(cfg.Log, "%s %s trial %d: %d ops (%d ok, %d failed, %d unknown; %d retried, %d resolved): audit %d, history %d violations\n",
		f, v, trial, hist.Attempted, hist.Ok, hist.Failed, hist.Unknown, rs.retried.Load(), rs.resolved.Load(), counted.Total(), hist.Anomalies.Total())
	return nil
}

// recorded is one worker's operations (workload.Ops): each has an
// operation ID, is recorded in the history, and is retried with its ID
// while its outcome is unknown.
type recorded struct {
	m      *market.Market
	s      market.Strategy
	user   string
	worker int // the worker's number in the history and its IDs
	n      int // operations so far
	rec    *history.Recorder
	rs     *resolver
	items  []string // a seller's items still to list
}

func (o *recorded) Item(_ context.Context, seq int) (string, bool, error) {
	if seq >= len(o.items) {
		return "", false, nil
	}
	return o.items[seq], true, nil
}

func (o *recorded) List(ctx context.Context, item string, price int64) error {
	id := o.nextID()
	op := o.rec.Invoke(o.worker, history.List, "", o.user, item, price)
	err := o.rs.do(ctx, op, func() error {
		_, err := o.m.List(ctx, o.s, o.user, item, price, market.OpID(id))
		return err
	})
	op.Complete(err)
	return err
}

func (o *recorded) Listings(ctx context.Context, k int) ([]market.Listing, error) {
	ls, _, err := o.m.Listings(ctx, 0, int64(k))
	return ls, err
}

func (o *recorded) Purchase(ctx context.Context, l market.Listing) error {
	id := o.nextID()
	op := o.rec.Invoke(o.worker, history.Purchase, o.user, l.Seller, l.Item, l.Price)
	err := o.rs.do(ctx, op, func() error {
		_, err := o.m.Purchase(ctx, o.s, o.user, l.Seller, l.Item, l.Price, market.OpID(id))
		return err
	})
	op.Complete(err)
	return err
}

// nextID is the ID of the worker's next operation.
func (o *recorded) nextID() string {
	id := opID(o.worker, o.n)
	o.n++
	return id
}

// inject applies fault f to srv for about cfg.Pause.
func inject(ctx context.Context, srv *redisserver.Server, f Fault, cfg Config) error {
	switch f {
	case Stall:
		if err := srv.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		err := (locking.RealClock{}).Sleep(ctx, cfg.Pause)
		if cerr := srv.Signal(syscall.SIGCONT); cerr != nil {
			return cerr
		}
		return err
	case DebugSleep:
		admin := checkClient(srv.Addr())
		defer admin.Close()
		return admin.Do(ctx, "DEBUG", "SLEEP", fmt.Sprintf("%.3f", cfg.Pause.Seconds())).Err()
	case ClientKill:
		admin := checkClient(srv.Addr())
		defer admin.Close()
		end := time.Now().Add(cfg.Pause)
		for time.Now().Before(end) {
			// Every normal connection but this one: workers in the middle
			// of MULTI/EXEC, WATCH or a script lose their connection.
			if err := admin.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
				return err
			}
			if err := (locking.RealClock{}).Sleep(ctx, 20*time.Millisecond); err != nil {
				return err
			}
		}
		return nil
	case Restart:
		srv.Kill()
		return srv.Restart(ctx)
	}
	return fmt.Errorf("%w: %s is not a workload fault", ErrConfig, f)
}
