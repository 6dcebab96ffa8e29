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
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim/report/progress"
)

// program is the command: its subcommands, in the overview's order, "run"
// the default.
var program = output.Program{
	Name: "simulate",
	Intro: "Runs the market's strategies against Redis and reports the book's tables beside\n" +
		"its own measurements. Without a subcommand, runs \"run\".\n",
	Subcommands: []output.Subcommand{
		{Name: "run", Run: runSim,
			Summary: "listers and buyers under each strategy, beside the book's tables (the default)"},
		{Name: "explore", Run: runExplore,
			Summary: "search the schedules of a lock's (or the market's) clients for the failure of a property"},
		{Name: "faults", Run: runFaults,
			Summary: "the market and its locks under injected faults: pauses, stalls, kills, failover"},
		{Name: "gallery", Run: runGallery,
			Summary: "each flawed lock recipe's failure reproduced in the market, then its fix"},
		{Name: "report", Run: reportCmd,
			Summary: "render a saved results.json again: table, markdown, CSV, JSON, charts"},
		{Name: "window", Run: windowCmd,
			Summary: "sweep the round trip: bought/s and WATCH retries against it, beside the model e^(-λw)"},
		{Name: "faults-client", Run: runFaultsClient, Hidden: true},
	},
	VersionUsage: versionUsage,
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
	exploreGC(os.Args[1:])
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

// run runs the subcommand args name (output.Program.Run).
// What it prints on stdout, and for the subcommands that read files
// others may have written (explore's recipes, report's documents) on
// stderr too, has its control characters escaped
// (output.PrintableWriter); the others' stderr keeps the progress line's
// own.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	stdout = output.PrintableWriter(stdout)
	if len(args) > 0 && (args[0] == "explore" || args[0] == "report") {
		stderr = output.PrintableWriter(stderr)
	}
	return program.Run(ctx, args, stdout, stderr)
}

const versionUsage = `usage: simulate version

Prints the program's version: the module version it was built at, or
"devel" and the commit it was built from (docs/simulator.md shows a
build that records it where go build cannot, as under -buildvcs=false),
then the Go release and the platform. It takes no flags.
`
