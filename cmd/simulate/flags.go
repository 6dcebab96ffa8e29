package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/market"
)

// cmdFlags is a subcommand's flag set (output.Flags). The flags several
// subcommands take (-redis, -format, -out, -seed, -wide, -v, -duration,
// -strategies, ...) are declared by its methods, so that they have one
// name, default and check everywhere.
type cmdFlags struct{ *output.Flags }

// newCmdFlags returns the flag set of the subcommand name ("simulate
// run"), whose -h prints usage, the flags and example.
func newCmdFlags(name, usage, example string, stderr io.Writer) *cmdFlags {
	return &cmdFlags{output.NewFlags(name, usage, example, stderr)}
}

// redis declares -redis; note, if not empty, says what the subcommand
// needs beyond it.
func (f *cmdFlags) redis(p *string, note string) {
	help := "Redis: auto (REDIS_URL, else a private redis-server from PATH, else embedded miniredis), " +
		"a redis:// URL, or host:port[,host:port...] of a cluster"
	if note != "" {
		help += "; " + note
	}
	f.StringVar(p, "redis", "auto", help)
}

// format declares -format, one of formats (default table).
func (f *cmdFlags) format(p *string, formats ...string) {
	f.StringVar(p, "format", "table", "output: "+strings.Join(formats, ", "))
	f.Check(func() error {
		if !slices.Contains(formats, *p) {
			return fmt.Errorf("-format %q: want one of %s", *p, strings.Join(formats, ", "))
		}
		return nil
	})
}

// out declares -out, the directory where the subcommand also writes
// what.
func (f *cmdFlags) out(p *string, what string) {
	f.StringVar(p, "out", "", "also write "+what+" into this `DIR`")
}

// seed declares -seed (default 1), the seed of what.
func (f *cmdFlags) seed(p *uint64, what string) {
	f.Uint64Var(p, "seed", 1, "seed of "+what)
}

// wide declares -wide: the table with every column; what says what the
// default table leaves out.
func (f *cmdFlags) wide(p *bool, what string) {
	f.BoolVar(p, "wide", false, "table: every column, "+what+" (wider than 100 columns)")
}

// verbose declares -v, which prints what to stderr.
func (f *cmdFlags) verbose(p *bool, what string) {
	f.BoolVar(p, "v", false, "print "+what)
}

// duration declares -duration, how long each cell runs.
func (f *cmdFlags) duration(p *time.Duration, help string) {
	f.DurationIn(p, "duration", 5*time.Second, 0, maxDuration, help)
}

// pick declares -pick, how many of the cheapest listings a buyer picks
// from.
func (f *cmdFlags) pick(p *int) {
	f.IntIn(p, "pick", sim.DefaultPick, 1, 10_000, "a buyer buys one of the K cheapest listings, chosen at random")
}

// strategies declares -strategies, the market's strategies to run (at
// least one).
func (f *cmdFlags) strategies(p *[]market.Strategy) {
	output.List(f.Flags, p, "strategies", "watch,coarse,fine,lua", "comma-separated strategies: watch, coarse, fine, lua",
		"strategy", func(s string) (market.Strategy, error) {
			st, err := market.ParseStrategy(s)
			if err != nil {
				return "", fmt.Errorf("unknown strategy %q (want watch, coarse, fine or lua)", s)
			}
			return st, nil
		})
}

// openRedis opens spec, the -redis flag of the subcommand called name; a
// malformed spec is a usage error of that subcommand.
func openRedis(ctx context.Context, name, spec string, stderr io.Writer) (*redisconn.Conn, error) {
	conn, err := redisconn.Open(ctx, spec, stderr)
	if errors.Is(err, redisconn.ErrSpec) {
		return nil, output.Usagef(stderr, name, "%v", err)
	}
	return conn, err
}
