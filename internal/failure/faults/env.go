package faults

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/failure/history"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// startServer starts a private redis-server with extra arguments.
func startServer(ctx context.Context, args ...string) (*redisserver.Server, error) {
	return redisserver.Start(ctx, redisserver.Options{Args: args})
}

// faultClient is a client as the workload uses it under faults: no
// automatic retries (a resent write whose first reply was lost could apply
// twice, or report "not found" for a purchase that happened), and short
// timeouts so a stalled server turns into errors, not hangs.
func faultClient(addr string, cfg Config, pool int) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:         addr,
		MaxRetries:   -1,
		DialTimeout:  cfg.ReadTimeout,
		ReadTimeout:  cfg.ReadTimeout,
		WriteTimeout: cfg.ReadTimeout,
		PoolSize:     pool,
		PoolTimeout:  2 * cfg.ReadTimeout,
	})
}

// checkClient reads the final state and audits, with patient timeouts.
func checkClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, ReadTimeout: 5 * time.Second, DialTimeout: 5 * time.Second})
}

var marketSeq atomic.Int64

// marketName returns a fresh market name for one trial.
func marketName(f Fault, trial int) string {
	return fmt.Sprintf("f%d-%s-%d", marketSeq.Add(1), f, trial)
}

// marketOptions are the options of every market of a trial of variant v
// on rdb.
func marketOptions(v Variant, cfg Config, rdb redisClient, extra ...market.Option) ([]market.Option, market.Strategy, error) {
	s, fenced, watchdog, err := v.strategy()
	if err != nil {
		return nil, "", err
	}
	opts := []market.Option{
		market.WithLockTTL(cfg.LockTTL),
		market.WithTimeouts(2*time.Second, 3*time.Second),
	}
	if fenced {
		if !FencingAvailable {
			return nil, "", fmt.Errorf("%w: %s needs market fencing", ErrConfig, v)
		}
		opts = append(opts, fencingOption())
	}
	if watchdog {
		opts = append(opts, markettrace.WithLockFunc(watchdogLock(rdb)))
	}
	return append(opts, extra...), s, nil
}

// watchdogLock is a market lock whose lease a watchdog goroutine renews
// (locking.KeepAlive) until it is released.
func watchdogLock(rdb redisClient) markettrace.LockFunc {
	return func(ctx context.Context, key string, ttl time.Duration) (markettrace.Lease, error) {
		l, err := locking.NewMutex(rdb, key, ttl).Acquire(ctx)
		if err != nil {
			return markettrace.Lease{}, err
		}
		_, stop := locking.KeepAlive(context.WithoutCancel(ctx), l, ttl)
		return markettrace.Lease{Token: l.Token(), Waits: l.Waits(), Release: func(ctx context.Context) error {
			stop()
			return l.Release(ctx)
		}}, nil
	}
}

// populate creates users with funds and grants items (item -> owner) on
// m, and returns the history set-up describing them.
func populate(ctx context.Context, m *market.Market, funds map[string]int64, items map[string]string) (history.Setup, error) {
	setup := history.NewSetup()
	users := make([]string, 0, len(funds))
	for u := range funds {
		users = append(users, u)
	}
	slices.Sort(users)
	for _, u := range users {
		if _, err := m.CreateUser(ctx, u, u, funds[u]); err != nil {
			return setup, fmt.Errorf("create user %s: %w", u, err)
		}
		setup.Funds[u] = funds[u]
	}
	names := make([]string, 0, len(items))
	for it := range items {
		names = append(names, it)
	}
	slices.Sort(names)
	for _, it := range names {
		if err := m.GrantItem(ctx, items[it], it); err != nil {
			return setup, fmt.Errorf("grant %s: %w", it, err)
		}
		setup.Owner[it] = items[it]
	}
	return setup, nil
}

// check reads the final state of market name through a patient client and
// runs the audit (through audited, the market whose ledger recorded the
// acknowledged operations) and the history checkers.
func check(ctx context.Context, addr string, audited *market.Market, setup history.Setup, ops []history.Op) (history.Report, market.Report, error) {
	c := checkClient(addr)
	defer c.Close()
	users := make([]string, 0, len(setup.Funds))
	for u := range setup.Funds {
		users = append(users, u)
	}
	slices.Sort(users)
	final, err := history.ReadState(ctx, c, audited.Name(), users)
	if err != nil {
		return history.Report{}, market.Report{}, err
	}
	hist := history.Check(setup, ops, final)
	m, err := market.New(c, audited.Name(), market.WithLedger(audited.Ledger()))
	if err != nil {
		return hist, market.Report{}, err
	}
	audit, err := m.Audit(ctx)
	return hist, audit, err
}

// execCmd is the command type of Config.ClientCommand.
type execCmd = exec.Cmd

// redisClient is what markets are built on.
type redisClient = redis.UniversalClient

// setDeathSignal makes the child die with this process, so that a
// stopped child is never left behind.
func setDeathSignal(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
