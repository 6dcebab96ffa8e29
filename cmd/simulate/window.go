package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/failure/bookform"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/internal/sim/measure"
	"github.com/lockmarket/lockmarket/internal/sim/report"
	"github.com/lockmarket/lockmarket/market/markettrace"
)

// windowOptions are the parsed flags of "simulate window".
type windowOptions struct {
	measure.WindowConfig
	redis  string
	format string
	out    string
	in     string
}

const windowUsage = `usage: simulate window [flags]

Sweeps the round trip to Redis (through the delay proxy of -rtt) for one
scenario, in each client form, under each strategy, and reports items
bought per second and WATCH's retries per purchase against it; beside each
WATCH point, the write rate λ to the keys a purchase WATCHes and the
conflict window w it measured, what the model P(commit) = e^(−λ·w)
predicts, and the model's error. Every cell is audited.

Flags:
`

const windowExample = `
Examples:
  simulate window                                    # 5x5, 0/1/2/4 ms, lean and book, 5s per cell
  simulate window -rtts 0,250us,500us,1ms -clients book -strategies watch,fine
  simulate window -duration 10s -out /tmp/window      # writes md, csv, json, svg
  simulate window -in results/window/window.json -format markdown
`

// parseWindowFlags parses and checks the flags of "simulate window".
func parseWindowFlags(args []string, stderr io.Writer) (windowOptions, error) {
	f := newCmdFlags("simulate window", windowUsage, windowExample, stderr)
	var o windowOptions
	f.redis(&o.redis, "")
	scenario := f.String("scenario", "5x5", "one LISTERSxBUYERS scenario")
	f.Check(func() (err error) {
		if o.Scenario, err = sim.ParseScenario(*scenario); err != nil {
			return fmt.Errorf("-scenario: %w", err)
		}
		return nil
	})
	output.List(f.Flags, &o.RTTs, "rtts", "0,1ms,2ms,4ms", fmt.Sprintf("comma-separated round trips to add, each 0..%v", measure.MaxRTT),
		"round trip", func(v string) (time.Duration, error) {
			d, err := time.ParseDuration(v)
			if err != nil {
				return 0, fmt.Errorf("%q is not a duration", v)
			}
			if d < 0 || d > measure.MaxRTT {
				return 0, fmt.Errorf("%v must be between 0 and %v", d, measure.MaxRTT)
			}
			return d, nil
		})
	output.List(f.Flags, &o.Clients, "clients", "lean,book", "comma-separated client forms: lean, book",
		"client form", func(v string) (markettrace.ClientForm, error) {
			form, err := markettrace.ParseClientForm(v)
			if err != nil {
				return "", fmt.Errorf("unknown client form %q (want lean or book)", v)
			}
			return form, nil
		})
	f.strategies(&o.Strategies)
	f.duration(&o.Duration, "how long each cell runs")
	f.seed(&o.Seed, "the workers' random prices and choices")
	f.pick(&o.Pick)
	f.format(&o.format, report.Formats...)
	f.out(&o.out, "window.md, window.csv, window.json and SVG charts")
	f.StringVar(&o.in, "in", "", "render a saved window.json again (tables, CSV, JSON, charts) instead of measuring")
	return o, f.Read(args)
}

// windowCmd is "simulate window".
func windowCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseWindowFlags(args, stderr)
	if err != nil {
		return err
	}
	if o.in != "" {
		return renderSavedSweep(o, stdout, stderr)
	}
	conn, err := openRedis(ctx, "simulate window", o.redis, stderr)
	if err != nil {
		return err
	}
	defer conn.Close()
	sw, err := measure.Window(ctx, conn, o.WindowConfig, bookform.Options, stderr)
	if len(sw.Points) > 0 {
		if err := writeSweep(o, sw, stdout, stderr); err != nil {
			return err
		}
	}
	return err
}

// writeSweep renders sw on stdout in o's format and, with -out, writes its
// files.
func writeSweep(o windowOptions, sw report.Sweep, stdout, stderr io.Writer) error {
	if err := report.RenderSweep(stdout, o.format, sw); err != nil {
		return err
	}
	if o.out == "" {
		return nil
	}
	files, err := report.WriteSweep(o.out, sw)
	if err != nil {
		return fmt.Errorf("-out %s: %w", o.out, err)
	}
	fmt.Fprintln(stderr, output.Wrap(fmt.Sprintf("simulate window: wrote %s into %s", strings.Join(files, ", "), o.out), output.Width))
	return nil
}

// renderSavedSweep renders the sweep saved in o.in, measuring nothing.
func renderSavedSweep(o windowOptions, stdout, stderr io.Writer) error {
	sw, err := report.ReadSweepFile(o.in)
	if err != nil {
		return err
	}
	return writeSweep(o, sw, stdout, stderr)
}
