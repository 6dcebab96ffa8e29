package main

import (
	"context"
	"errors"
	"flag"
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

// cmdFlags is a subcommand's flag set. The flags several subcommands take
// (-redis, -format, -out, -seed, -wide, -v, -duration, -strategies, ...)
// are declared by its methods, so that they have one name, default and
// check everywhere; each declaration may add a check, and parse runs the
// checks once the command line is read. Every mistake is a usage error:
// one line naming the subcommand, then where its help is (exit status 2).
type cmdFlags struct {
	*flag.FlagSet
	stderr io.Writer
	checks []func() error
}

// newCmdFlags returns the flag set of the subcommand name ("simulate
// run"), whose -h prints usage, the flags and example.
func newCmdFlags(name, usage, example string, stderr io.Writer) *cmdFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		output.PrintDefaults(fs.Output(), fs)
		fmt.Fprint(fs.Output(), example)
	}
	return &cmdFlags{FlagSet: fs, stderr: stderr}
}

// check adds a check that parse runs after reading the flags, in the
// order they were added; its error becomes the usage error's line.
func (f *cmdFlags) check(c func() error) { f.checks = append(f.checks, c) }

// parse reads args and runs the checks. -h prints the help and returns
// flag.ErrHelp; a mistake is printed and returned wrapped in errUsage.
func (f *cmdFlags) parse(args []string) error {
	if err := parseFlags(f.FlagSet, args, f.stderr); err != nil {
		return err
	}
	for _, c := range f.checks {
		if err := c(); err != nil {
			return f.bad("%v", err)
		}
	}
	return nil
}

// bad prints a mistake found after parse and returns it as a usage error.
func (f *cmdFlags) bad(format string, a ...any) error {
	return usagef(f.stderr, f.Name(), format, a...)
}

// set reports whether the flag called name was given on the command line.
func (f *cmdFlags) set(name string) bool {
	given := false
	f.Visit(func(fl *flag.Flag) { given = given || fl.Name == name })
	return given
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
	f.check(func() error {
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

// durationIn declares a duration flag that must lie in (0, hi] when lo is
// 0, else in [lo, hi].
func (f *cmdFlags) durationIn(p *time.Duration, name string, def, lo, hi time.Duration, help string) {
	f.DurationVar(p, name, def, help)
	f.check(func() error {
		switch {
		case lo == 0 && (*p <= 0 || *p > hi):
			return fmt.Errorf("-%s %v must be positive and at most %v", name, *p, hi)
		case lo != 0 && (*p < lo || *p > hi):
			return fmt.Errorf("-%s %v must be between %v and %v", name, *p, lo, hi)
		}
		return nil
	})
}

// intIn declares an integer flag that must lie in [lo, hi].
func (f *cmdFlags) intIn(p *int, name string, def, lo, hi int, help string) {
	f.IntVar(p, name, def, help)
	f.check(func() error {
		if *p < lo || *p > hi {
			return fmt.Errorf("-%s %d must be between %d and %d", name, *p, lo, hi)
		}
		return nil
	})
}

// duration declares -duration, how long each cell runs.
func (f *cmdFlags) duration(p *time.Duration, help string) {
	f.durationIn(p, "duration", 5*time.Second, 0, maxDuration, help)
}

// pick declares -pick, how many of the cheapest listings a buyer picks
// from.
func (f *cmdFlags) pick(p *int) {
	f.intIn(p, "pick", sim.DefaultPick, 1, 10_000, "a buyer buys one of the K cheapest listings, chosen at random")
}

// strategies declares -strategies, the market's strategies to run (at
// least one).
func (f *cmdFlags) strategies(p *[]market.Strategy) {
	listFlag(f, p, "strategies", "watch,coarse,fine,lua", "comma-separated strategies: watch, coarse, fine, lua",
		"strategy", func(s string) (market.Strategy, error) {
			st, err := market.ParseStrategy(s)
			if err != nil {
				return "", fmt.Errorf("unknown strategy %q (want watch, coarse, fine or lua)", s)
			}
			return st, nil
		})
}

// listFlag declares a flag holding a comma-separated list, parsed item by
// item into p: items are trimmed, empty ones skipped and repeats dropped.
// An empty list is refused, naming what, unless what is "".
func listFlag[T comparable](f *cmdFlags, p *[]T, name, def, help, what string, parse func(string) (T, error)) {
	s := f.String(name, def, help)
	f.check(func() error {
		*p = nil
		for item := range strings.SplitSeq(*s, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			v, err := parse(item)
			if err != nil {
				return fmt.Errorf("-%s: %w", name, err)
			}
			if !slices.Contains(*p, v) {
				*p = append(*p, v)
			}
		}
		if len(*p) == 0 && what != "" {
			return fmt.Errorf("-%s: no %s given", name, what)
		}
		return nil
	})
}

// parseFlags parses a subcommand's arguments. -h returns flag.ErrHelp
// (the help was printed); a bad flag, or any argument left over, is a
// usage error: it is printed and returned wrapped in errUsage.
//
// The error stays one line (output.ParseFlags), followed by where to find
// the usage.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	err := output.ParseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	if err != nil {
		return usagef(stderr, fs.Name(), "%v", err)
	}
	if fs.NArg() > 0 {
		return usagef(stderr, fs.Name(), "unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// openRedis opens spec, the -redis flag of the subcommand called name; a
// malformed spec is a usage error of that subcommand.
func openRedis(ctx context.Context, name, spec string, stderr io.Writer) (*redisconn.Conn, error) {
	conn, err := redisconn.Open(ctx, spec, stderr)
	if errors.Is(err, redisconn.ErrSpec) {
		return nil, usagef(stderr, name, "%v", err)
	}
	return conn, err
}

// usagef prints a command-line mistake of the subcommand called name and
// returns it wrapped in errUsage (exit status 2).
func usagef(stderr io.Writer, name, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	fmt.Fprintf(stderr, "%s\nrun '%s -h' for usage\n", output.Wrap(name+": "+msg, output.Width), name)
	return fmt.Errorf("%w: %s", errUsage, msg)
}
