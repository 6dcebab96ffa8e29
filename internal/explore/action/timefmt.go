package action

// How actions are written: as text for people (Action.String, FormatAt,
// FormatMS) and as JSON, with times in milliseconds exact to the
// nanosecond.

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// msNumber writes a virtual time as milliseconds with the decimals it
// needs to be exact to the nanosecond ("3333.333334"); "" for 0.
func msNumber(d time.Duration) json.Number {
	if d == 0 {
		return ""
	}
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	ms, ns := int64(d/time.Millisecond), int64(d%time.Millisecond)
	if ns == 0 {
		return json.Number(sign + strconv.FormatInt(ms, 10))
	}
	frac := strings.TrimRight(fmt.Sprintf("%06d", ns), "0")
	return json.Number(sign + strconv.FormatInt(ms, 10) + "." + frac)
}

// parseMS reads what msNumber writes, or any JSON number of
// milliseconds (rounded to the nanosecond).
func parseMS(n json.Number) (time.Duration, error) {
	s := string(n)
	if s == "" {
		return 0, nil
	}
	if !strings.ContainsAny(s, "eE") {
		neg := strings.HasPrefix(s, "-")
		whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
		if len(frac) <= 6 {
			ms, err := strconv.ParseInt(whole, 10, 64)
			if err == nil && ms <= math.MaxInt64/int64(time.Millisecond)-1 {
				ns := int64(0)
				if frac != "" {
					ns, err = strconv.ParseInt(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
				}
				if err == nil {
					d := time.Duration(ms)*time.Millisecond + time.Duration(ns)
					if neg {
						d = -d
					}
					return d, nil
				}
			}
		}
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) ||
		math.Abs(f) > float64(math.MaxInt64)/float64(time.Millisecond) {
		return 0, fmt.Errorf("explore: at_ms %q: not a time", s)
	}
	return time.Duration(math.Round(f * float64(time.Millisecond))), nil
}

// actionJSON is Action as JSON: At as at_ms.
type actionJSON struct {
	plainAction
	AtMS json.Number `json:"at_ms,omitempty"`
}

type plainAction Action

// MarshalJSON writes the action with snake_case keys, At as at_ms
// (milliseconds, exact to the nanosecond).
func (a Action) MarshalJSON() ([]byte, error) {
	return json.Marshal(actionJSON{plainAction(a), msNumber(a.At)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (a *Action) UnmarshalJSON(b []byte) error {
	var j actionJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	at, err := parseMS(j.AtMS)
	if err != nil {
		return err
	}
	*a = Action(j.plainAction)
	a.At = at
	return nil
}

// FormatAt formats a virtual time: t=1.5s, or to the nanosecond when it is
// not a whole millisecond (t=3.333333334s).
func FormatAt(d time.Duration) string {
	if d%time.Millisecond == 0 {
		return FormatMS(d.Milliseconds())
	}
	sign := ""
	if d < 0 {
		sign, d = "-", -d
	}
	frac := strings.TrimRight(fmt.Sprintf("%09d", int64(d%time.Second)), "0")
	return fmt.Sprintf("t=%s%d.%ss", sign, int64(d/time.Second), frac)
}

// FormatMS writes a virtual time in ms as a timeline shows it: "t=2s",
// "t=0.010s".
func FormatMS(ms int64) string {
	if ms%1000 == 0 {
		return fmt.Sprintf("t=%ds", ms/1000)
	}
	return fmt.Sprintf("t=%.3fs", float64(ms)/1000)
}

// String says what the action does.
func (a Action) String() string {
	if f, ok := FaultOf(a); ok {
		return f.describe(a)
	}
	switch a.Kind {
	case Run:
		return a.Client + ": " + a.Command
	case Tick:
		if a.Timer {
			return "clock → the next timer"
		}
		return fmt.Sprintf("clock → %s", FormatAt(a.At))
	case Start:
		return a.Client + " starts"
	}
	return a.Kind
}

// describe says what a, the action of f, does (Action.String).
func (f Fault) describe(a Action) string {
	switch {
	case a.Kind == Pause:
		return fmt.Sprintf("%s paused "+
			"(%s)", a.Client, a.Length)
	case f == FaultCrash:
		return a.Client + " crashes"
	case f == FaultNodeRestart:
		return a.Node + " restarts empty"
	}
	return a.Node + "'s clock jumps"
}
