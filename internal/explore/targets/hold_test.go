package targets_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestBackgroundContextIsHeld: a command sent with context.Background()
// (as libraries that take no context send theirs) is held and ordered
// like any other: the hook knows its client from the go-redis client.
func TestBackgroundContextIsHeld(t *testing.T) {
	rdb, stop := redistest.Embedded()
	defer stop()
	target := sched.Code(
		"sends with context.Background()", 0, nil,
		func(_ context.Context, c *sched.Client) error {
			return c.Redis().Set(context.Background(), c.Key("k"), c.Name(), 0).Err()
		}, nil,
	)
	m := action.DefaultModel()
	m.FaultKinds = nil
	e, err := sched.NewExplorer(context.Background(), rdb, target, m)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	starts := []action.Action{
		{Kind: action.Start, Client: "A"},
		{Kind: action.Start, Client: "B"},
	}
	steps, _, err := e.Replay(context.Background(), starts)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, s := range steps {
		if s.Action.Kind == action.Run {
			ran = append(ran, s.Action.Client+": "+s.Action.Command)
		}
	}
	if want := "A: SET k, B: SET k"; strings.Join(ran, ", ") != want {
		t.Errorf("commands run %q, want %q", ran, want)
	}
}

// TestGoStatementIsAdopted: a goroutine the client's code starts with
// the go statement (as a library that sends from goroutines of its own
// does), and one that goroutine starts in turn, are the client's: their
// commands are held and ordered like its own, and the search ends
// without error.
func TestGoStatementIsAdopted(t *testing.T) {
	rdb, stop := redistest.Embedded()
	defer stop()
	target := sched.Code(
		"sends from goroutines of its own", 0, nil,
		func(ctx context.Context, c *sched.Client) error {
			done := make(chan error, 1)
			go func() {
				inner := make(chan error, 1)
				go func() { inner <- c.Redis().Set(ctx, c.Key("k"), c.Name(), 0).Err() }()
				if err := <-inner; err != nil {
					done <- err
					return
				}
				done <- c.Redis().Get(ctx, c.Key("k")).Err()
			}()
			return <-done
		}, nil,
	)
	m := action.DefaultModel()
	m.FaultKinds = nil
	res, err := sched.CheckTarget(context.Background(), rdb, target,
		sched.Options{Model: &m, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Two clients of two commands each: the interleavings of SET and GET
	// on one key, less those the reductions show alike.
	if !res.Exhaustive || res.Schedules < 2 {
		t.Errorf("exhaustive %v after %d schedules, want an exhaustive search of several",
			res.Exhaustive, res.Schedules)
	}
	if res.FromStarted["A"] != 2*res.Schedules || res.FromStarted["B"] != 2*res.Schedules {
		t.Errorf("commands from goroutines the clients started: %v in %d schedules, "+
			"want 2 each per schedule", res.FromStarted, res.Schedules)
	}
}

// TestOutsideWorkerIsRefused: a command sent by a goroutine that
// descends from no client (a worker started before the search, fed by a
// channel) ends the search with ErrOutside, naming the client and the
// command: the explorer cannot wait for it, and never lets it through.
func TestOutsideWorkerIsRefused(t *testing.T) {
	rdb, stop := redistest.Embedded()
	defer stop()
	jobs := make(chan func())
	defer close(jobs)
	go func() {
		for f := range jobs {
			f()
		}
	}()
	target := sched.Code(
		"sends from a worker of the process", 0, nil,
		func(ctx context.Context, c *sched.Client) error {
			done := make(chan error, 1)
			jobs <- func() { done <- c.Redis().Set(ctx, c.Key("k"), c.Name(), 0).Err() }
			return <-done
		}, nil,
	)
	m := action.DefaultModel()
	m.FaultKinds = nil
	_, err := sched.CheckTarget(context.Background(), rdb, target, sched.Options{Model: &m})
	if !errors.Is(err, sched.ErrOutside) {
		t.Fatalf("err = %v, want ErrOutside", err)
	}
	for _, want := range []string{"sent SET k", "descends from no client"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}

// TestWallClockWait: a client that sleeps on the wall clock ends the
// search with ErrWallClock, naming the client, its last command and the
// wait. It sets WallAfter low, so it must not run in parallel with
// another test.
func TestWallClockWait(t *testing.T) {
	rdb, stop := redistest.Embedded()
	defer stop()
	old := sched.WallAfter
	sched.WallAfter = 200 * time.Millisecond
	defer func() { sched.WallAfter = old }()
	target := sched.Code(
		"sleeps on the wall clock", 0, nil,
		func(ctx context.Context, c *sched.Client) error {
			if err := c.Redis().Set(ctx, c.Key("k"), c.Name(), 0).Err(); err != nil {
				return err
			}
			for range 20 {
				if ctx.Err() != nil {
					return nil
				}
				time.Sleep(50 * time.Millisecond)
			}
			return nil
		}, nil,
	)
	m := action.DefaultModel()
	m.FaultKinds = nil
	_, err := sched.CheckTarget(
		context.Background(), rdb, target, sched.Options{Model: &m, Workers: 1},
	)
	if !errors.Is(err, sched.ErrWallClock) {
		t.Fatalf("err = %v, want ErrWallClock", err)
	}
	for _, want := range []string{"after its last command, SET k → OK", "time.Sleep " +
		"in ", "Client.Sleep", "fewer"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
}

// TestModes: a mode is one of three; "" is Exhaustive; any other is an
// error, for ParseMode and for a search told to use it.
func TestModes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want sched.Mode
		err  bool
	}{
		{"", sched.Exhaustive, false},
		{"exhaustive", sched.Exhaustive, false},
		{"random", sched.Random, false},
		{"pct", sched.PCT, false},
		{"dfs", "", true},
		{"Random", "", true},
	} {
		got, err := sched.ParseMode(tc.in)
		if got != tc.want || (err != nil) != tc.err ||
			err != nil && !errors.Is(err, sched.ErrMode) {
			t.Errorf("ParseMode(%q) = %q, %v; want %q (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
	rdb, stop := redistest.Embedded()
	defer stop()
	target := sched.Code("idle", 0, nil, func(context.Context, *sched.Client) error { return nil }, nil)
	_, err := sched.CheckTarget(context.Background(), rdb, target, sched.Options{Mode: "dfs"})
	if !errors.Is(err, sched.ErrMode) {
		t.Errorf("a search in mode dfs: err = %v, want ErrMode", err)
	}
}
