// Command simulate runs listers and buyers against Redis under each
// concurrency-control strategy and reports the book's tables beside its own
// measurements. See the README for its subcommands and flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim/report/progress"
)

// subcommand is one subcommand: its name, its implementation, run with
// its own arguments, and what it does in one line for the overview
// ("simulate help"). A hidden subcommand is left out of the overview.
type subcommand struct {
	name    string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	summary string
	hidden  bool
}

// subcommands is every subcommand, in the overview's order; "run" is the
// default.
var subcommands = []subcommand{
	{name: "run", run: runSim,
		summary: "listers and buyers under each strategy, beside the book's tables (the default)"},
	{name: "explore", run: runExplore,
		summary: "search the schedules of a lock's (or the market's) clients for the failure of a property"},
	{name: "faults", run: runFaults,
		summary: "the market and its locks under injected faults: pauses, stalls, kills, failover"},
	{name: "gallery", run: runGallery,
		summary: "each flawed lock recipe's failure reproduced in the market, then its fix"},
	{name: "report", run: reportCmd,
		summary: "render a saved results.json again: table, markdown, CSV, JSON, charts"},
	{name: "window", run: windowCmd,
		summary: "sweep the round trip: bought/s and WATCH retries against it, beside the model e^(-λw)"},
	{name: "faults-client", run: runFaultsClient, hidden: true},
}

// lookup returns the subcommand called name.
func lookup(name string) (subcommand, bool) {
	i := slices.IndexFunc(subcommands, func(c subcommand) bool { return c.name == name })
	if i < 0 {
		return subcommand{}, false
	}
	return subcommands[i], true
}

// exitInterrupted is the exit status of a run that Ctrl-C (SIGINT) or
// SIGTERM stopped before its end (progress.ErrInterrupted), having printed
// what it measured until then and found nothing broken, as a shell
// reports a process SIGINT ended.
const exitInterrupted = 130

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	redis.SetLogger(redisconn.NewLogger(redisLog(os.Args[1:], os.Stderr), "simulate"))
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	code := exitCode(err)
	if code != 0 && code != 2 { // a usage error's message is printed already
		fmt.Fprintln(os.Stderr, "simulate:", err)
	}
	if code != 0 {
		os.Exit(code)
	}
}

// exitCode is the exit status for run's error: 0 for none (or -h), 2 for
// a usage error, 130 for a run interrupted before its end that found
// nothing broken in what it measured, 3 when some cells of "simulate
// faults" could not run or an exploration was no proof
// (errExploreInconclusive), 1 for anything else (a violation, for the
// subcommands that check, interrupted or not).
func exitCode(err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, output.ErrUsage):
		return 2
	case errors.Is(err, progress.ErrInterrupted):
		return exitInterrupted
	case errors.Is(err, errCellsNotRun), errors.Is(err, errExploreInconclusive):
		return 3
	}
	return 1
}

// redisLog is where go-redis's own log lines go: nowhere for "faults",
// which stops and kills servers on purpose and records what each
// operation saw, else stderr, as lines of this program.
func redisLog(args []string, stderr io.Writer) io.Writer {
	if len(args) > 0 && (args[0] == "faults" || args[0] == "faults-client") {
		return io.Discard
	}
	return stderr
}

// run dispatches to a subcommand; with no subcommand name it runs "run".
// "-h" and "help" print the overview, "help NAME" a subcommand's help, and
// "version" (or "-version") the program's version.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			overview(stdout)
			return nil
		case "help":
			return help(ctx, args[1:], stdout, stderr)
		case "version", "-version", "--version":
			if len(args) == 2 && (args[1] == "-h" || args[1] == "-help" || args[1] == "--help") {
				fmt.Fprint(stdout, versionUsage)
				return nil
			}
			if len(args) > 1 {
				return output.Usagef(stderr, "simulate version", "unexpected argument %q", args[1])
			}
			fmt.Fprintln(stdout, output.VersionLine("simulate"))
			return nil
		}
	}
	name := "run"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	cmd, ok := lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "simulate: unknown subcommand %q (want %s)\nrun 'simulate -h' for usage\n",
			name, strings.Join(visible(), ", "))
		return output.ErrUsage
	}
	return cmd.run(ctx, args, stdout, stderr)
}

const versionUsage = `usage: simulate version

Prints the program's version: the module version it was built at, or
"devel" and the commit it was built from (docs/simulator.md shows a
build that records it where go build cannot, as under -buildvcs=false),
then the Go release and the platform. It takes no flags.
`

// visible lists the subcommands of the overview.
func visible() []string {
	var names []string
	for _, c := range subcommands {
		if !c.hidden {
			names = append(names, c.name)
		}
	}
	return names
}

// overview prints every subcommand with one line each.
func overview(w io.Writer) {
	fmt.Fprint(w, "usage: simulate [SUBCOMMAND] [flags]\n\n"+
		"Runs the market's strategies against Redis and reports the book's tables beside\n"+
		"its own measurements. Without a subcommand, runs \"run\".\n\nSubcommands:\n")
	for _, c := range subcommands {
		if !c.hidden {
			fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
		}
	}
	fmt.Fprintf(w, "  %-8s %s\n", "help", "this list; 'simulate help SUBCOMMAND' (or 'simulate SUBCOMMAND -h') for its flags")
	fmt.Fprintf(w, "  %-8s %s\n", "version", "the program's version (the commit it was built from, when known)")
	fmt.Fprint(w, "\nFlags:\n  -h, -help  this list\n  -version   the same as version\n")
}

// help is "simulate help [SUBCOMMAND]".
func help(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		overview(stdout)
		return nil
	}
	cmd, ok := lookup(args[0])
	if len(args) > 1 || !ok || cmd.hidden {
		fmt.Fprintf(stderr, "simulate help: want one subcommand of %s, got %q\n", strings.Join(visible(), ", "), args)
		return output.ErrUsage
	}
	// A subcommand prints its help on stderr, as the flag package does for
	// -h; asked for by name, it goes to stdout.
	if err := cmd.run(ctx, []string{"-h"}, stdout, stdout); !errors.Is(err, flag.ErrHelp) {
		return err
	}
	return nil
}
