package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/failure/faults"
	"github.com/lockmarket/lockmarket/internal/failure/gallery"
	"github.com/lockmarket/lockmarket/internal/failure/history"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/market"
)

// TestOverview: "-h", "-help" and "help" list every subcommand but the
// internal faults-client, one line each, in lines that fit the terminal.
func TestOverview(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"-help"}, {"--help"}, {"help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), args, &stdout, &stderr); err != nil {
				t.Fatalf("%v: %s", err, stderr.String())
			}
			out := stdout.String()
			for _, cmd := range program.Subcommands {
				name := cmd.Name
				line := "  " + name + " "
				switch {
				case cmd.Hidden && strings.Contains(out, name):
					t.Errorf("the internal %q is listed:\n%s", name, out)
				case !cmd.Hidden && strings.Count(out, line) != 1:
					t.Errorf("%q is not listed once:\n%s", name, out)
				case !cmd.Hidden && !strings.Contains(out, line+strings.Repeat(" ", 8-len(name))+cmd.Summary+"\n"):
					t.Errorf("%q is not listed with its summary %q:\n%s", name, cmd.Summary, out)
				}
			}
			for _, want := range []string{"  help ", "-version"} {
				if !strings.Contains(out, want) {
					t.Errorf("overview lacks %q:\n%s", want, out)
				}
			}
			if w := output.Widest(out); w > output.Width {
				t.Errorf("overview is %d columns wide:\n%s", w, out)
			}
		})
	}
	if len(program.Visible()) < 4 || program.Visible()[0] != "run" {
		t.Errorf("visible = %v, want run first and at least run, faults, gallery, report", program.Visible())
	}
}

// TestHelpSubcommand: "help NAME" prints NAME's flags on stdout; an
// unknown or internal name is a usage error.
func TestHelpSubcommand(t *testing.T) {
	for name, want := range map[string]string{"run": "-strategies", "gallery": "-recipes", "faults": "-trials", "report": "-in"} {
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), []string{"help", name}, &stdout, &stderr); err != nil {
			t.Fatalf("help %s: %v", name, err)
		}
		if !strings.Contains(stdout.String(), want) || !strings.Contains(stdout.String(), "-wide") {
			t.Errorf("help %s lacks %q or -wide:\n%s", name, want, stdout.String())
		}
	}
	for _, args := range [][]string{{"help", "nope"}, {"help", "faults-client"}, {"help", "run", "gallery"}} {
		var stderr bytes.Buffer
		if err := run(context.Background(), args, &bytes.Buffer{}, &stderr); !errors.Is(err, output.ErrUsage) || stderr.Len() == 0 {
			t.Errorf("%v: err %v, stderr %q; want a usage error", args, err, stderr.String())
		}
	}
}

func TestVersion(t *testing.T) {
	for _, arg := range []string{"-version", "--version"} {
		var stdout bytes.Buffer
		if err := run(context.Background(), []string{arg}, &stdout, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		if got := stdout.String(); got != output.VersionLine("simulate")+"\n" || !strings.HasPrefix(got, "simulate ") {
			t.Errorf("%s printed %q", arg, got)
		}
	}
}

// TestDefaultTablesFit renders the default tables of gallery and faults
// with the real recipes, faults and strategies at six-digit counts: every
// line fits output.Width columns. The -wide tables are measured and
// logged.
func TestDefaultTablesFit(t *testing.T) {
	const big = 999_999
	gdoc := gallery.Document{Env: output.NewEnv("redis-server", "7.0.15")}
	for _, s := range gallery.Scenarios() {
		gdoc.Rows = append(gdoc.Rows, gallery.Row{Recipe: s.Recipe, Fault: s.Fault, Consequence: s.Consequence,
			Violations: big, FixedBy: s.FixedBy, FixedViolations: big})
	}
	fdoc := faults.Document{Env: output.NewEnv("redis-server", "7.0.15"), Trials: 1000, LockTTLMs: 200, PauseMs: 600,
		ReadTimeoutMs: 300, DurationS: 1}
	for _, f := range faults.Faults {
		for _, v := range append(f.Variants(), "coarse+fencing", "fine+fencing", "fine+watchdog") {
			fdoc.Rows = append(fdoc.Rows, faults.Result{Fault: f, Variant: v, Trials: 1000,
				Counts:   history.Counts{Attempted: big, Ok: big, Failed: big, Unknown: big},
				Audit:    market.Violations{MoneyNotConserved: 1000, NegativeFunds: big, ItemMisplaced: big},
				History:  history.Anomalies{history.NotLinearizable: big, history.SoldTwice: big, history.LostSales: big, history.FundsMismatch: big},
				LockLost: big, DoubleHolders: big, StaleWrites: big,
				Retried: big, Resolved: big, Lost: big, Duplicated: big, RefusedApplied: big})
		}
	}
	for _, tc := range []struct {
		name   string
		render func(w *bytes.Buffer, wide bool) error
	}{
		{"gallery", func(w *bytes.Buffer, wide bool) error { return gdoc.Render(w, "table", wide) }},
		{"faults", func(w *bytes.Buffer, wide bool) error { return fdoc.Render(w, "table", wide) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var narrow, wide bytes.Buffer
			if err := tc.render(&narrow, false); err != nil {
				t.Fatal(err)
			}
			if err := tc.render(&wide, true); err != nil {
				t.Fatal(err)
			}
			if w := output.Widest(narrow.String()); w > output.Width {
				t.Errorf("the default table is %d columns wide, more than %d:\n%s", w, output.Width, narrow.String())
			}
			t.Logf("default table %d columns, -wide %d", output.Widest(narrow.String()), output.Widest(wide.String()))
		})
	}
}

// TestSubcommandNames: every subcommand of the table has a name of its
// own, and "run", the default, comes first.
func TestSubcommandNames(t *testing.T) {
	seen := map[string]bool{}
	for _, c := range program.Subcommands {
		if c.Name == "" || seen[c.Name] {
			t.Errorf("subcommand %q: empty or listed twice", c.Name)
		}
		seen[c.Name] = true
	}
	if program.Subcommands[0].Name != "run" {
		t.Errorf("the first subcommand is %q, want run (the default)", program.Subcommands[0].Name)
	}
}
