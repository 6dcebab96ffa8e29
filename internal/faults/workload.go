package faults

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"time"

	"github.com/lockmarket/lockmarket/internal/halt"
	"github.com/lockmarket/lockmarket/internal/history"
	"github.com/lockmarket/lockmarket/internal/redisserver"
	"github.com/lockmarket/lockmarket/market"
)

// The workload of the stall, kill and restart faults: wlSellers sellers own
// wlItems items each, of which wlPreListed are listed at set-up; during the
// trial each seller lists the rest one by one, and wlBuyers buyers
// repeatedly buy one of the ten cheapest listings at its listed price.
const (
	wlSellers   = 3
	wlBuyers    = 4
	wlItems     = 40
	wlPreListed = 10
	wlMaxPrice  = 100
	wlFunds     = 1_000_000
	// wlErrorPause is how long a worker waits after an error that is not a
	// refusal, so that a stalled or restarting server is not hammered.
	wlErrorPause = 10 * time.Millisecond
)

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
	price := func(r *rand.Rand) int64 { return 1 + r.Int64N(wlMaxPrice) }
	rec := history.NewRecorder()
	for i := range wlSellers {
		for _, it := range owned[i][:wlPreListed] {
			seller, p := fmt.Sprintf("s%d", i), price(rng)
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
		wg.Go(func() {
			seller := fmt.Sprintf("s%d", i)
			n := 0
			for _, it := range owned[i][wlPreListed:] {
				if halt.Requested(stop) {
					return
				}
				p := price(r)
				id := opID(1+i, n)
				n++
				op := rec.Invoke(1+i, history.List, "", seller, it, p)
				err := rs.do(ctx, op, func() error {
					_, err := m.List(ctx, s, seller, it, p, market.OpID(id))
					return err
				})
				if op.Complete(err) == history.Unknown {
					halt.Pause(wlErrorPause, stop)
				}
				halt.Pause(time.Duration(5+r.IntN(15))*time.Millisecond, stop)
			}
		})
	}
	for i := range wlBuyers {
		r := rand.New(rand.NewPCG(cfg.Seed, uint64(trial)<<8|uint64(100+i)))
		wg.Go(func() {
			buyer := fmt.Sprintf("b%d", i)
			n := 0
			for !halt.Requested(stop) {
				ls, _, err := m.Listings(ctx, 0, 10)
				if err != nil {
					halt.Pause(wlErrorPause, stop)
					continue
				}
				if len(ls) == 0 {
					halt.Pause(2*time.Millisecond, stop)
					continue
				}
				l := ls[r.IntN(len(ls))]
				id := opID(1+wlSellers+i, n)
				n++
				op := rec.Invoke(1+wlSellers+i, history.Purchase, buyer, l.Seller, l.Item, l.Price)
				err = rs.do(ctx, op, func() error {
					_, err := m.Purchase(ctx, s, buyer, l.Seller, l.Item, l.Price, market.OpID(id))
					return err
				})
				if op.Complete(err) == history.Unknown {
					halt.Pause(wlErrorPause, stop)
				}
			}
		})
	}
	injectErr := make(chan error, 1)
	go func() {
		halt.Pause(cfg.Duration/4, stop)
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
		f, v, trial, hist.Attempted, hist.Ok, hist.Failed, hist.Unknown, rs.retried.Load(), rs.resolved.Load(), counted.Total(), hist.Total())
	return nil
}

// inject applies fault f to srv for about cfg.Pause.
func inject(ctx context.Context, srv *redisserver.Server, f Fault, cfg Config) error {
	switch f {
	case Stall:
		if err := srv.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		err := halt.Sleep(ctx, cfg.Pause)
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
			if err := halt.Sleep(ctx, 20*time.Millisecond); err != nil {
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
