package output

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// ErrUsage marks a command-line mistake whose message was printed (exit
// status 2).
var ErrUsage = errors.New("usage error")

// Flags is a subcommand's flag set whose declarations may each add a
// check, which Read runs once the command line is read. Every mistake is
// a usage error: one line naming the subcommand, then where its help is.
type Flags struct {
	*flag.FlagSet
	stderr io.Writer
	checks []func() error
}

// NewFlags returns the flag set of the subcommand name ("simulate run"),
// whose -h prints usage, the flags (PrintDefaults) and example.
func NewFlags(name, usage, example string, stderr io.Writer) *Flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		PrintDefaults(fs.Output(), fs)
		fmt.Fprint(fs.Output(), example)
	}
	return &Flags{FlagSet: fs, stderr: stderr}
}

// Check adds a check that Read runs after reading the flags, in the
// order they were added; its error becomes the usage error's line.
func (f *Flags) Check(c func() error) { f.checks = append(f.checks, c) }

// Read reads args and runs the checks. -h prints the help and returns
// flag.ErrHelp; a bad flag, an argument left over or a failed check is
// printed and returned wrapped in ErrUsage.
func (f *Flags) Read(args []string) error {
	err := ParseFlags(f.FlagSet, args)
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	if err != nil {
		return f.Bad("%v", err)
	}
	if f.NArg() > 0 {
		return f.Bad("unexpected argument %q", f.Arg(0))
	}
	for _, c := range f.checks {
		if err := c(); err != nil {
			return f.Bad("%v", err)
		}
	}
	return nil
}

// Bad prints a mistake found after Read and returns it as a usage error.
func (f *Flags) Bad(format string, a ...any) error {
	return Usagef(f.stderr, f.Name(), format, a...)
}

// Given reports whether the flag called name was given on the command
// line.
func (f *Flags) Given(name string) bool {
	given := false
	f.Visit(func(fl *flag.Flag) { given = given || fl.Name == name })
	return given
}

// DurationIn declares a duration flag that must lie in (0, hi] when lo is
// 0, else in [lo, hi].
func (f *Flags) DurationIn(p *time.Duration, name string, def, lo, hi time.Duration, help string) {
	f.DurationVar(p, name, def, help)
	f.Check(func() error {
		switch {
		case lo == 0 && (*p <= 0 || *p > hi):
			return fmt.Errorf("-%s %v must be positive and at most %v", name, *p, hi)
		case lo != 0 && (*p < lo || *p > hi):
			return fmt.Errorf("-%s %v must be between %v and %v", name, *p, lo, hi)
		}
		return nil
	})
}

// IntIn declares an integer flag that must lie in [lo, hi].
func (f *Flags) IntIn(p *int, name string, def, lo, hi int, help string) {
	f.IntVar(p, name, def, help)
	f.Check(func() error {
		if *p < lo || *p > hi {
			return fmt.Errorf("-%s %d must be between %d and %d", name, *p, lo, hi)
		}
		return nil
	})
}

// List declares a flag of f holding a comma-separated list, parsed item
// by item into p: items are trimmed, empty ones skipped and repeats
// dropped. An empty list is refused, naming what, unless what is "".
func List[T comparable](f *Flags, p *[]T, name, def, help, what string, parse func(string) (T, error)) {
	s := f.String(name, def, help)
	f.Check(func() error {
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

// Usagef prints a command-line mistake of the subcommand called name, one
// line wrapped to Width and then where its usage is, and returns it
// wrapped in ErrUsage.
func Usagef(stderr io.Writer, name, format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	fmt.Fprintf(stderr, "%s\nrun '%s -h' for usage\n", Wrap(name+": "+msg, Width), name)
	return fmt.Errorf("%w: %s", ErrUsage, msg)
}
