package faults

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/locking"
)

// The failover trials: a holder takes foLocks locks (leases of foTTL, far
// longer than the trial) on a primary that has one replica; the primary
// is killed and the replica promoted; a second client then tries to take
// every lock on the new primary. A lock it gets while the first holder's
// lease is still valid is held twice.
const (
	foLocks = 10
	foTTL   = 30 * time.Second
	// foWaitTimeout bounds each WAIT for the replica's acknowledgement.
	foWaitTimeout = time.Second
)

func runFailover(ctx context.Context, f Fault, cfg Config) (Result, error) {
	res := Result{Fault: f, Variant: Mutex}
	for trial := range cfg.Trials {
		if err := failoverTrial(ctx, f, cfg, trial, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// startPair starts a primary and a replica of it, and waits until the
// replica has synchronised.
func startPair(ctx context.Context) (primary, replica *redisserver.Server, err error) {
	// No diskless-sync delay: the replica synchronises at once.
	primary, err = startServer(ctx, "--repl-diskless-sync-delay", "0")
	if err != nil {
		return nil, nil, err
	}
	replica, err = startServer(ctx, "--replicaof", "127.0.0.1", strconv.Itoa(primary.Port()))
	if err != nil {
		primary.Stop()
		return nil, nil, err
	}
	c := checkClient(replica.Addr())
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := c.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return primary, replica, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			primary.Stop()
			replica.Stop()
			return nil, nil, fmt.Errorf("replica did not synchronise: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func failoverTrial(ctx context.Context, f Fault, cfg Config, trial int, res *Result) error {
	primary, replica, err := startPair(ctx)
	if err != nil {
		return err
	}
	defer primary.Stop()
	defer replica.Stop()
	if f == FailoverNoLink {
		// The replica stops receiving: what the primary grants from now
		// on exists only there.
		// Stopping the replica alone is not enough: the kernel would
		// buffer the stream and hand it over on SIGCONT. The primary also
		// drops its connection to the stopped replica, which cannot
		// reconnect until it runs again.
		if err := replica.Signal(syscall.SIGSTOP); err != nil {
			return err
		}
		defer replica.Signal(syscall.SIGCONT)
		admin := checkClient(primary.Addr())
		err := admin.ClientKillByFilter(ctx, "TYPE", "replica").Err()
		admin.Close()
		if err != nil {
			return fmt.Errorf("drop the replica link: %w", err)
		}
	}
	// One connection, so that WAIT follows the acquisition on the
	// connection that made it.
	holder := redis.NewClient(&redis.Options{Addr: primary.Addr(), PoolSize: 1, MaxRetries: -1})
	defer holder.Close()
	type hold struct {
		lock *locking.Lock
		key  string
	}
	var held []hold
	for i := range foLocks {
		key := fmt.Sprintf("{fo%d}:lock:%d", trial, i)
		res.Attempted++
		l, err := locking.NewMutex(holder, key, foTTL).TryAcquire(ctx)
		if err != nil {
			res.Unknown++
			res.note("trial %d: acquire %s: %v", trial, key, err)
			continue
		}
		if f == FailoverWait {
			n, err := holder.Wait(ctx, 1, foWaitTimeout).Result()
			if err != nil || n < 1 {
				// Not on the replica: a careful holder gives it up.
				res.Failed++
				l.Release(ctx)
				continue
			}
		}
		res.Ok++
		held = append(held, hold{l, key})
	}
	primary.Kill()
	if f == FailoverNoLink {
		replica.Signal(syscall.SIGCONT)
	}
	promoted := checkClient(replica.Addr())
	defer promoted.Close()
	if err := promoted.ReplicaOf(ctx, "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("promote replica: %w", err)
	}
	second := redis.NewClient(&redis.Options{Addr: replica.Addr(), MaxRetries: -1})
	defer second.Close()
	lost, double := 0, 0
	for _, h := range held {
		v, err := promoted.Get(ctx, h.key).Result()
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if v != h.lock.Token() {
			lost++
		}
		if _, err := locking.NewMutex(second, h.key, foTTL).TryAcquire(ctx); err == nil {
			if time.Now().Before(h.lock.Expires()) {
				double++
			}
		} else if !errors.Is(err, locking.ErrNotAcquired) {
			return err
		}
	}
	res.Trials++
	res.LockLost += lost
	res.DoubleHolders += double
	fmt.Fprintf(cfg.Log, "%s trial %d: %d held, %d lost in failover, %d held twice\n", f, trial, len(held), lost, double)
	return nil
}
