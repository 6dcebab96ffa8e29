// Package probe reads what a run costs outside the Go code under test:
// the Redis server's memory, CPU and command counters (INFO, MEMORY
// USAGE) and this process's resident memory and CPU time.
package probe

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"github.com/redis/go-redis/v9"
)

// ServerStats are counters read from INFO on every master (summed on a
// cluster). A counter the server does not report (miniredis) is zero and
// OK is false.
type ServerStats struct {
	// UsedMemory is used_memory, in bytes.
	UsedMemory int64
	// CPU is used_cpu_user + used_cpu_sys of the server processes.
	CPU time.Duration
	// Commands is total_commands_processed.
	Commands int64
	// Masters is how many servers were read.
	Masters int
	// OK is set when every server reported all three counters.
	OK bool
}

// ReadServerStats reads INFO memory, cpu and stats from c's server, or from
// each master of a cluster, and sums them.
func ReadServerStats(ctx context.Context, c redis.UniversalClient) (ServerStats, error) {
	var s ServerStats
	s.OK = true
	read := func(ctx context.Context, node redis.Cmdable) error {
		text, err := node.Info(ctx, "memory", "cpu", "stats").Result()
		if err != nil {
			return err
		}
		f := parseInfo(text)
		mem, ok1 := f["used_memory"]
		user, ok2 := f["used_cpu_user"]
		sys, ok3 := f["used_cpu_sys"]
		cmds, ok4 := f["total_commands_processed"]
		s.OK = s.OK && ok1 && ok2 && ok3 && ok4
		s.UsedMemory += int64(mem)
		s.CPU += time.Duration((user + sys) * float64(time.Second))
		s.Commands += int64(cmds)
		s.Masters++
		return nil
	}
	err := eachMaster(ctx, c, read)
	if err != nil {
		return ServerStats{}, fmt.Errorf("server stats: %w", err)
	}
	return s, nil
}

// parseInfo reads the numeric "name:value" lines of an INFO reply.
func parseInfo(text string) map[string]float64 {
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		name, val, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok || strings.HasPrefix(name, "#") {
			continue
		}
		if v, err := strconv.ParseFloat(val, 64); err == nil {
			out[name] = v
		}
	}
	return out
}

// KeyMemory is MEMORY USAGE key SAMPLES 0 (every element counted), or 0
// when the server does not support it (miniredis).
func KeyMemory(ctx context.Context, c redis.UniversalClient, key string) int64 {
	n, err := c.MemoryUsage(ctx, key, 0).Result()
	if err != nil {
		return 0
	}
	return n
}

// ProcessRSS returns this process's resident set size (VmRSS in
// /proc/self/status), or 0 where /proc does not say.
func ProcessRSS() int64 {
	p, err := procfs.Self()
	if err != nil {
		return 0
	}
	st, err := p.NewStatus()
	if err != nil {
		return 0
	}
	return int64(st.VmRSS)
}

// ProcessCPU returns the user plus system CPU time this process has used.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// eachMaster calls fn with c, or on a cluster with each master in turn
// (ForEachMaster runs its calls concurrently; fn here may add to shared
// sums without locking).
func eachMaster(ctx context.Context, c redis.UniversalClient, fn func(ctx context.Context, node redis.Cmdable) error) error {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return fn(ctx, c)
	}
	var mu sync.Mutex
	return cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		return fn(ctx, n)
	})
}

// WaitLazyFree waits (at most 10 s) until Redis has freed the keys an
// earlier UNLINK handed to its background thread, so that a used_memory
// reading is not inflated by them. Errors (miniredis) end the wait.
func WaitLazyFree(ctx context.Context, c redis.UniversalClient) {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		pending := 0.0
		read := func(ctx context.Context, n redis.Cmdable) error {
			text, err := n.Info(ctx, "memory").Result()
			if err != nil {
				return err
			}
			pending += parseInfo(text)["lazyfree_pending_objects"]
			return nil
		}
		err := eachMaster(ctx, c, read)
		if err != nil || pending == 0 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
