package output

import (
	"errors"
	"flag"
	"io"
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
