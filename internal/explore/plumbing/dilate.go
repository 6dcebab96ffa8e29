package plumbing

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/locking/locktrace"
)

// Dilation is the factor between the explorer's virtual time and the
// time the code under test and the server see. Every duration they are
// given is the virtual one times Dilation: the lease a lock is made with
// (a 10 s lease is a lease of 10,000,000 s on the server), the waits a
// target configures (the retry between attempts), every lease the
// explorer shortens on the server when its clock advances or a node's
// clock jumps, and the clock the clients read (locking.Clock's Now is
// the epoch plus the virtual time times Dilation). Going back, a sleep
// of d on that clock lasts d/Dilation of virtual time, and a lease's end
// read from a lock or a command is divided by it. Reports are in virtual
// time.
//
// So the real time a schedule takes, which runs every lease down on the
// server as it passes, moves a lease by that time divided by Dilation: a
// stall of 2 s of the machine moves it by 2 µs of virtual time. Durations
// written as constants in the code under test (a backoff of 1 ms, say)
// are not scaled: they shrink by Dilation (1 ms lasts 1 ns of virtual
// time).
const Dilation = 1_000_000

// DilateBy is the virtual duration v dilated by f (Dilation, or 1 in
// tests), saturating at the largest durations.
func DilateBy(f int64, v time.Duration) time.Duration {
	switch {
	case v > math.MaxInt64/time.Duration(f):
		return math.MaxInt64
	case v < math.MinInt64/time.Duration(f):
		return math.MinInt64
	}
	return v * time.Duration(f)
}

// UndilateBy is the virtual duration of d, dilated by f, rounded up to a
// whole nanosecond.
func UndilateBy(f int64, d time.Duration) time.Duration {
	v := d / time.Duration(f)
	if d%time.Duration(f) > 0 {
		v++
	}
	return v
}

// VirtualArgs is a command's arguments as a timeline shows and reads
// them: the leases it sets (SET's PX and EX, PSETEX, SETEX, PEXPIRE,
// EXPIRE, and the TTL of package locking's acquiring and extending
// scripts) in virtual time, when they are a whole number of their unit
// there; everything else as it was sent.
func VirtualArgs(f int64, args []string) []string {
	if f == 1 || len(args) < 3 {
		return args
	}
	out := slices.Clone(args)
	conv := func(i int, unit time.Duration) {
		n, err := strconv.ParseInt(out[i], 10, 64)
		if err != nil || n <= 0 || n > math.MaxInt64/int64(unit) {
			return
		}
		v := UndilateBy(f, time.Duration(n)*unit)
		if v%unit == 0 && DilateBy(f, v) == time.Duration(n)*unit {
			out[i] = strconv.FormatInt(int64(v/unit), 10)
		}
	}
	switch strings.ToLower(out[0]) {
	case "set":
		for i := 3; i+1 < len(out); i++ {
			switch strings.ToLower(out[i]) {
			case "px":
				conv(i+1, time.Millisecond)
			case "ex":
				conv(i+1, time.Second)
			}
		}
	case "psetex", "pexpire":
		conv(2, time.Millisecond)
	case "setex", "expire":
		conv(2, time.Second)
	case "eval", "evalsha":
		switch locktrace.ScriptName(out[1]) {
		case locktrace.ScriptAcquireFenced, locktrace.ScriptExtend:
			// The keys, then ARGV[1] the token and ARGV[2] the TTL in ms.
			if n, err := strconv.Atoi(out[2]); err == nil && n >= 0 && 3+n+1 < len(out) {
				conv(3+n+1, time.Millisecond)
			}
		}
	}
	return out
}
