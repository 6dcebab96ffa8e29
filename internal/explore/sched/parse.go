package sched

import (
	"fmt"
	"slices"
	"strings"
)

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
