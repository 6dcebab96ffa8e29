package explore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/explore"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestBackgroundContextIsHeld: a command sent with context.Background()
// (as libraries that take no context send theirs) is held and ordered
// like any other: the hook knows its client from the go-redis client.
func TestBackgroundContextIsHeld(t *testing.T) {
	rdb, stop := redistest.Embedded()
	defer stop()
	target := &explore.Target{
		Name: "sends with context.Background()",
		Client: func(_ context.Context, c *explore.Client) error {
			return c.Redis().Set(context.Background(), c.Key("k"), c.Name(), 0).Err()
		},
	}
	m := explore.DefaultModel()
	m.FaultKinds = nil
	e, err := explore.New(context.Background(), rdb, target, m)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	starts := []explore.Action{
		{Kind: explore.Start, Client: "A"},
		{Kind: explore.Start, Client: "B"},
	}
	steps, _, err := e.Replay(context.Background(), starts)
	if err != nil {
		t.Fatal(err)
	}
	var ran []string
	for _, s := range steps {
		if s.Action.Kind == explore.Run {
			ran = append(ran, s.Action.Client+": "+s.Action.Command)
		}
	}
	if want := "A: SET k, B: SET k"; strings.Join(ran, ", ") != want {
		t.Errorf("commands run %q, want %q", ran, want)
	}
}

// TestGoStatementIsRefused: a command sent from a goroutine started with
// the go statement, which the scheduler cannot wait for, ends the search
// with ErrOutside naming the client, the command and the fix.
func TestGoStatementIsRefused(t *testing.T) {
	rdb, stop := redistest.Embedded()
	defer stop()
	target := &explore.Target{
		Name: "sends from a goroutine of its own",
		Client: func(ctx context.Context, c *explore.Client) error {
			done := make(chan error, 1)
			go func() { done <- c.Redis().Set(ctx, c.Key("k"), c.Name(), 0).Err() }()
			return <-done
		},
	}
	m := explore.DefaultModel()
	m.FaultKinds = nil
	_, err := explore.Check(context.Background(), rdb, target, explore.Options{Model: &m})
	if !errors.Is(err, explore.ErrOutside) {
		t.Fatalf("err = %v, want ErrOutside", err)
	}
	for _, want := range []string{"client A sent SET k", "Client.Go"} {
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
	old := explore.WallAfter
	explore.WallAfter = 200 * time.Millisecond
	defer func() { explore.WallAfter = old }()
	target := &explore.Target{
		Name: "sleeps on the wall clock",
		Client: func(ctx context.Context, c *explore.Client) error {
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
		},
	}
	m := explore.DefaultModel()
	m.FaultKinds = nil
	_, err := explore.Check(
		context.Background(), rdb, target, explore.Options{Model: &m, Workers: 1},
	)
	if !errors.Is(err, explore.ErrWallClock) {
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
		want explore.Mode
		err  bool
	}{
		{"", explore.Exhaustive, false},
		{"exhaustive", explore.Exhaustive, false},
		{"random", explore.Random, false},
		{"pct", explore.PCT, false},
		{"dfs", "", true},
		{"Random", "", true},
	} {
		got, err := explore.ParseMode(tc.in)
		if got != tc.want || (err != nil) != tc.err ||
			err != nil && !errors.Is(err, explore.ErrMode) {
			t.Errorf("ParseMode(%q) = %q, %v; want %q (error %v)", tc.in, got, err, tc.want, tc.err)
		}
	}
	rdb, stop := redistest.Embedded()
	defer stop()
	target := &explore.Target{
		Name:   "idle",
		Client: func(context.Context, *explore.Client) error { return nil },
	}
	_, err := explore.Check(context.Background(), rdb, target, explore.Options{Mode: "dfs"})
	if !errors.Is(err, explore.ErrMode) {
		t.Errorf("a search in mode dfs: err = %v, want ErrMode", err)
	}
}
