package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestReport: no error and -h exit 0 silently; a usage mistake exits 2
// with where the usage is; anything else exits 1, named by the command.
func TestReport(t *testing.T) {
	tests := []struct {
		err      error
		code     int
		wantText string
	}{
		{nil, 0, ""},
		{flag.ErrHelp, 0, ""},
		{Usagef("-format %q: want table or json", "x"), 2, "cmd: -format \"x\": want table or json\nrun 'cmd -h' for usage\n"},
		{fmt.Errorf("start redis-server: %w", errors.New("no binary")), 1, "cmd: start redis-server: no binary\n"},
	}
	for _, tt := range tests {
		var b strings.Builder
		if code := report("cmd", tt.err, &b); code != tt.code || b.String() != tt.wantText {
			t.Errorf("report(%v) = %d, %q; want %d, %q", tt.err, code, b.String(), tt.code, tt.wantText)
		}
	}
}

// TestParse: a flag mistake is a usage error, -h is flag.ErrHelp, and
// good flags parse.
func TestParse(t *testing.T) {
	tests := []struct {
		args []string
		want error
	}{{nil, nil}, {[]string{"-n", "3"}, nil}, {[]string{"-n", "x"}, ErrUsage}, {[]string{"-nope"}, ErrUsage},
		{[]string{"-h"}, flag.ErrHelp}}
	for _, tt := range tests {
		fs := flag.NewFlagSet("cmd", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Int("n", 1, "a number")
		if err := Parse(fs, tt.args); !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("Parse(%q) = %v, want %v", tt.args, err, tt.want)
		}
	}
}
