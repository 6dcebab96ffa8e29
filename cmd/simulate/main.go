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
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

// subcommand runs one subcommand with its own arguments.
type subcommand func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// subcommands maps a subcommand name to its implementation; files of this
// package add theirs in init. "run" is the default.
var subcommands = map[string]subcommand{}

// errUsage marks a command-line mistake: the message was printed, exit 2.
var errUsage = errors.New("usage error")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "simulate:", err)
		os.Exit(1)
	}
}

// run dispatches to a subcommand; with no subcommand name it runs "run".
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	name := "run"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	cmd, ok := subcommands[name]
	if !ok {
		names := slices.Sorted(maps.Keys(subcommands))
		fmt.Fprintf(stderr, "simulate: unknown subcommand %q (want %s)\n", name, strings.Join(names, ", "))
		return errUsage
	}
	return cmd(ctx, args, stdout, stderr)
}

// parseFlags parses a subcommand's arguments. -h returns flag.ErrHelp
// (the help was printed); a bad flag, or any argument left over, is a
// usage error: it is printed and returned wrapped in errUsage.
func parseFlags(fs *flag.FlagSet, args []string, stderr io.Writer) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	if fs.NArg() > 0 {
		return usagef(stderr, fs.Name(), "unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// usagef prints a command-line mistake of the subcommand called name and
// returns it wrapped in errUsage (exit status 2).
func usagef(stderr io.Writer, name, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	fmt.Fprintf(stderr, "%s: %s\nRun '%s -h' for help.\n", name, msg, name)
	return fmt.Errorf("%w: %s", errUsage, msg)
}
