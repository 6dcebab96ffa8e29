package output

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Subcommand is one subcommand of a Program: its name, its run (with its
// own arguments) and what it does in one line for the overview. A hidden
// one is left out of the overview and of help.
type Subcommand struct {
	Name    string
	Run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	Summary string
	Hidden  bool
}

// Program is a command made of subcommands, the first of them the
// default: "NAME -h" and "NAME help" print the overview (its usage line,
// Intro, a line per subcommand), "NAME help SUB" a subcommand's help, and
// "NAME version" the version line (VersionUsage is its help).
type Program struct {
	Name         string
	Intro        string
	Subcommands  []Subcommand
	VersionUsage string
}

// Run runs the subcommand args name, or the default one when args starts
// with a flag or is empty.
func (p Program) Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "-h", "-help", "--help":
			p.Overview(stdout)
			return nil
		case "help":
			return p.help(ctx, args[1:], stdout, stderr)
		case "version", "-version", "--version":
			if len(args) == 2 && (args[1] == "-h" || args[1] == "-help" || args[1] == "--help") {
				fmt.Fprint(stdout, p.VersionUsage)
				return nil
			}
			if len(args) > 1 {
				return Usagef(stderr, p.Name+" version", "unexpected argument %q", args[1])
			}
			fmt.Fprintln(stdout, VersionLine(p.Name))
			return nil
		}
	}
	name := p.Subcommands[0].Name
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		name, args = args[0], args[1:]
	}
	cmd, ok := p.Lookup(name)
	if !ok {
		fmt.Fprintf(stderr, "%s: unknown subcommand %q (want %s)\nrun '%s -h' for usage\n",
			p.Name, name, strings.Join(p.Visible(), ", "), p.Name)
		return ErrUsage
	}
	return cmd.Run(ctx, args, stdout, stderr)
}

// Lookup returns the subcommand called name.
func (p Program) Lookup(name string) (Subcommand, bool) {
	i := slices.IndexFunc(p.Subcommands, func(c Subcommand) bool { return c.Name == name })
	if i < 0 {
		return Subcommand{}, false
	}
	return p.Subcommands[i], true
}

// Visible lists the names of the subcommands of the overview.
func (p Program) Visible() []string {
	var names []string
	for _, c := range p.Subcommands {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	return names
}

// Overview prints every subcommand with one line each.
func (p Program) Overview(w io.Writer) {
	fmt.Fprintf(w, "usage: %s [SUBCOMMAND] [flags]\n\n%s\nSubcommands:\n", p.Name, p.Intro)
	for _, c := range p.Subcommands {
		if !c.Hidden {
			fmt.Fprintf(w, "  %-8s %s\n", c.Name, c.Summary)
		}
	}
	fmt.Fprintf(w, "  %-8s this list; '%s help SUBCOMMAND' (or '%s SUBCOMMAND -h') for its flags\n",
		"help", p.Name, p.Name)
	fmt.Fprintf(w, "  %-8s %s\n", "version", "the program's version (the commit it was built from, when known)")
	fmt.Fprint(w, "\nFlags:\n  -h, -help  this list\n  -version   the same as version\n")
}

// help is "NAME help [SUBCOMMAND]".
func (p Program) help(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		p.Overview(stdout)
		return nil
	}
	cmd, ok := p.Lookup(args[0])
	if len(args) > 1 || !ok || cmd.Hidden {
		fmt.Fprintf(stderr, "%s help: want one subcommand of %s, got %q\n", p.Name,
			strings.Join(p.Visible(), ", "), args)
		return ErrUsage
	}
	// A subcommand prints its help on stderr, as the flag package does for
	// -h; asked for by name, it goes to stdout.
	if err := cmd.Run(ctx, []string{"-h"}, stdout, stdout); !errors.Is(err, flag.ErrHelp) {
		return err
	}
	return nil
}
