package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/internal/sim/measure"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestRefusesWhatTheMachineCannotHold: a run whose cells ask for more
// workers than a cell may run is refused with a hint before Redis is
// touched (the address given would fail to connect, exit 1, not 2).
func TestRefusesWhatTheMachineCannotHold(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"128,000 workers", []string{"-scenarios", "1000x1000", "-markets", "64"},
			"1000x1000 with -markets 64 runs 128,000 workers in a cell, beyond the 8,000"},
		{"the largest scenario counts", []string{"-scenarios", "1x1,1000x1000", "-markets", "5"},
			"runs 10,000 workers"},
		{"slices too short", []string{"-duration", "30ms", "-rounds", "5"}, "makes slices of 6ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"-redis", "127.0.0.1:1"}, tt.args...), &stdout, &stderr)
			if !errors.Is(err, output.ErrUsage) {
				t.Fatalf("err = %v, want a usage error (exit 2)\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) || !strings.Contains(stderr.String(), "-h' for usage") {
				t.Errorf("stderr lacks %q and the hint:\n%s", tt.want, stderr.String())
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout: %s", stdout.String())
			}
		})
	}
	if err := measure.CheckBounds([]sim.Scenario{{Listers: 50, Buyers: 50}}, 3, 0); err != nil {
		t.Errorf("50x50 on 3 markets refused: %v", err)
	}
}

// TestSIGTERMStopsARun sends SIGTERM to a run of an hour per cell once its
// first cell has started: the program stops within 5 s, as Ctrl-C stops
// it, with the cell measured so far and exit status 130 (interrupted).
func TestSIGTERMStopsARun(t *testing.T) {
	t.Parallel() // a server of its own
	if testing.Short() {
		t.Skip("runs the program as a process")
	}
	b := redistest.Real(t)
	cmd := exec.Command(os.Args[0], "-redis", b.Addr(), "-scenarios", "5x5", "-strategies", "lua",
		"-duration", "1h", "-format", "csv")
	cmd.Env = append(os.Environ(), asMain+"=1")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The cell's label is printed when it starts, its line ended when it
	// ends: read until the label.
	var log strings.Builder
	buf := make([]byte, 4096)
	for !strings.Contains(log.String(), "[1/") {
		n, err := stderr.Read(buf)
		log.Write(buf[:n])
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("stderr ended before the first cell: %v\n%s", err, log.String())
		}
	}
	time.Sleep(200 * time.Millisecond) // into the cell's workers
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	rest := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(stderr)
		rest <- b
	}()
	exited := make(chan error, 1)
	go func() {
		log.Write(<-rest)
		exited <- cmd.Wait()
	}()
	select {
	case err = <-exited:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		<-exited
		t.Fatalf("still running 5 s after SIGTERM:\n%s", log.String())
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
		t.Fatalf("exit: %v after %v, want status %d (interrupted)\n%s", err, time.Since(sent), exitInterrupted, log.String())
	}
	if !strings.Contains(log.String(), "interrupted") {
		t.Errorf("stderr does not say it was interrupted:\n%s", log.String())
	}
	if n := strings.Count(strings.TrimSpace(stdout.String()), "\n"); n != 1 {
		t.Errorf("csv has %d lines after its header, want the one cell measured:\n%s", n, stdout.String())
	}
}

// TestProgressLinesFit: every line of a run's stderr fits 100 columns
// (progress.TestLineFits: a cell's line with far larger figures too).
func TestProgressLinesFit(t *testing.T) {
	t.Parallel() // a server of its own
	b := redistest.Real(t)
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-redis", b.Addr(), "-scenarios", "1x1,50x50",
		"-strategies", "watch,coarse", "-duration", "200ms", "-rounds", "2", "-markets", "2"}, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\n%s", err, stderr.String())
	}
	for _, line := range strings.Split(stderr.String(), "\n") {
		if n := len([]rune(line)); n > output.Width {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
}
