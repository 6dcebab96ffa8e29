package output_test

import (
	"bytes"
	"errors"
	"flag"
	"testing"

	"github.com/lockmarket/lockmarket/internal/report/output"
)

func TestParseFlags(t *testing.T) {
	for _, c := range []struct {
		args      []string
		wantErr   error // nil: parsed
		wantUsage bool
	}{
		{[]string{"-n", "3"}, nil, false},
		{[]string{"-h"}, flag.ErrHelp, true},
		{[]string{"-nope"}, errors.New("flag provided but not defined: -nope"), false},
		{[]string{"-n", "x"}, errors.New(`invalid value "x" for flag -n: parse error`), false},
	} {
		var out bytes.Buffer
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(&out)
		fs.Int("n", 0, "a number")
		fs.Usage = func() { out.WriteString("USAGE\n") }
		err := output.ParseFlags(fs, c.args)
		switch {
		case c.wantErr == nil && err != nil, c.wantErr != nil && (err == nil || err.Error() != c.wantErr.Error()):
			t.Errorf("%q: error %v, want %v", c.args, err, c.wantErr)
		}
		if got := out.String(); (got == "USAGE\n") != c.wantUsage || (!c.wantUsage && got != "") {
			t.Errorf("%q printed %q", c.args, got)
		}
		if fs.Output() != &out {
			t.Errorf("%q: the flag set's output was not put back", c.args)
		}
	}
}
