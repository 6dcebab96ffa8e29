package sched

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// ErrBoundForm is returned by ParseBounds for a list that is not of the
// form NAME=N,NAME=N.
var ErrBoundForm = errors.New(
	"explore: bounds want the form iterations=N,attempts=N,faults=N,ticks=N,steps=N",
)

// ParseBounds sets the bounds of m that s names: a comma-separated list
// of NAME=N, where NAME is iterations, attempts, faults, ticks or steps
// (the fields of Model of those names). An empty s sets none. The values
// are not checked here (Model.Validate does).
func ParseBounds(s string, m *Model) error {
	if s == "" {
		return nil
	}
	bounds := map[string]*int{"iterations": &m.Iterations, "attempts": &m.Attempts,
		"faults": &m.Faults, "ticks": &m.Ticks, "steps": &m.Steps}
	for kv := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			return ErrBoundForm
		}
		field, known := bounds[k]
		if !known {
			return fmt.Errorf(
				"unknown bound %q (want iterations, attempts, faults, ticks, steps)",
				k,
			)
		}
		*field = n
	}
	return nil
}

// ParseLeases reads a comma-separated list of leases, one per client in
// order (Model.TTLs), such as "10s,3s".
func ParseLeases(s string) ([]time.Duration, error) {
	var out []time.Duration
	for d := range strings.SplitSeq(s, ",") {
		v, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil {
			return nil, fmt.Errorf("lease %q: %w", d, err)
		}
		out = append(out, v)
	}
	return out, nil
}

// ParseProperties reads a comma-separated list of properties to check
// (Properties), or "all" for every one. An empty s is none: the target's
// own.
func ParseProperties(s string) ([]string, error) {
	switch s {
	case "":
		return nil, nil
	case "all":
		return Properties(), nil // the caller's to change
	}
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		p = strings.TrimSpace(p)
		if !slices.Contains(properties, p) {
			return nil, fmt.Errorf(
				"unknown property %q (want %s)", p, strings.Join(properties, ", "),
			)
		}
		out = append(out, p)
	}
	return out, nil
}
