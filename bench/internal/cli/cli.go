// Package cli runs the bench module's commands as the project's commands
// run: a function run(ctx, args, stdout, stderr) that parses its own flag
// set, under a context that an interrupt or SIGTERM ends. A mistake in the
// command line is one line on stderr, followed by where the usage is, and
// exit status 2; any other failure, exit status 1.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/lockmarket/lockmarket/internal/report/output"
)

// ErrUsage marks a mistake in the command line (exit status 2).
var ErrUsage = errors.New("usage")

// Usagef returns a mistake in the command line, said as format says; it
// is ErrUsage (errors.Is).
func Usagef(format string, a ...any) error { return usageError(fmt.Sprintf(format, a...)) }

// usageError is a mistake in the command line, in words.
type usageError string

func (e usageError) Error() string      { return string(e) }
func (usageError) Is(target error) bool { return target == ErrUsage }

// Parse parses args with fs, keeping a mistake to one line
// (output.ParseFlags): it returns flag.ErrHelp after -h has printed the
// usage, and any other mistake wrapped in ErrUsage.
func Parse(fs *flag.FlagSet, args []string) error {
	err := output.ParseFlags(fs, args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return Usagef("%v", err)
}

// Main runs the command called name: run with the command line's
// arguments, the process's stdout and stderr, and a context that the
// first interrupt or SIGTERM ends. It then exits with status 0 (no error,
// or -h), 2 (ErrUsage) or 1, printing the error as "name: error".
func Main(name string, run func(ctx context.Context, args []string, stdout, stderr io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if code := report(name, err, os.Stderr); code != 0 {
		os.Exit(code)
	}
}

// report prints err, if it is one to print, and returns the exit status
// it calls for.
func report(name string, err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrUsage):
		fmt.Fprintf(stderr, "%s: %v\nrun '%s -h' for usage\n", name, err, name)
		return 2
	}
	fmt.Fprintf(stderr, "%s: %v\n", name, err)
	return 1
}
