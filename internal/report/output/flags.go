package output

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// ParseFlags parses args with fs, keeping a mistake to one line. The flag
// package prints the whole usage after its one-line error; ParseFlags
// prints the usage only for -h (and returns flag.ErrHelp), and returns
// any other mistake without printing it, for the command to print as its
// own line followed by where its usage is.
func ParseFlags(fs *flag.FlagSet, args []string) error {
	usage, out := fs.Usage, fs.Output()
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		usage()
	}
	return err
}

// flagIndent is where a flag's description starts in PrintDefaults.
const flagIndent = "      "

// PrintDefaults prints fs's flags as flag.PrintDefaults does, one flag a
// time in name order, "  -name TYPE" and then its description with its
// default, but indented by spaces rather than a tab and wrapped to Width
// columns, so that a help fits the terminal it is read on.
func PrintDefaults(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		name, usage := flag.UnquoteUsage(f)
		head := "  -" + f.Name
		if name != "" {
			head += " " + name
		}
		if def := defaultText(f); def != "" {
			usage += " (default " + def + ")"
		}
		fmt.Fprintln(w, head)
		for _, line := range strings.Split(Wrap(usage, Width-len(flagIndent)), "\n") {
			fmt.Fprintln(w, flagIndent+line)
		}
	})
}

// defaultText is f's default as PrintDefaults shows it: quoted for a
// string, "" for a zero value.
func defaultText(f *flag.Flag) string {
	switch f.DefValue {
	case "", "0", "false", "0s", "[]":
		return ""
	}
	if _, ok := f.Value.(interface{ IsBoolFlag() bool }); ok {
		return f.DefValue
	}
	if g, ok := f.Value.(flag.Getter); ok {
		if _, isString := g.Get().(string); isString {
			return fmt.Sprintf("%q", f.DefValue)
		}
	}
	return f.DefValue
}
