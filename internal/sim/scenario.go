package sim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxWorkers bounds the listers and the buyers of one scenario: enough for
// any sweep this machine can drive, small enough that a typo (5000x5) is
// caught before thousands of goroutines and connections are opened.
const MaxWorkers = 1000

// ErrBadScenario is returned for a scenario that is not LISTERSxBUYERS with
// both counts in 1..MaxWorkers.
var ErrBadScenario = errors.New("bad scenario")

// Scenario is how many listers and buyers run at once.
type Scenario struct {
	Listers int `json:"listers"`
	Buyers  int `json:"buyers"`
}

// String is the scenario as written on the command line, e.g. "5x1".
func (s Scenario) String() string { return fmt.Sprintf("%dx%d", s.Listers, s.Buyers) }

// DefaultScenarios are the book's three: 1 lister/1 buyer, 5/1 and 5/5.
var DefaultScenarios = []Scenario{{1, 1}, {5, 1}, {5, 5}}

// ParseScenario parses "LISTERSxBUYERS", e.g. "5x5" or "50x50".
func ParseScenario(s string) (Scenario, error) {
	l, b, ok := strings.Cut(strings.ToLower(strings.TrimSpace(s)), "x")
	if !ok {
		return Scenario{}, fmt.Errorf("%w %q: want LISTERSxBUYERS, e.g. 5x1", ErrBadScenario, s)
	}
	listers, err1 := strconv.Atoi(l)
	buyers, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil {
		return Scenario{}, fmt.Errorf("%w %q: want LISTERSxBUYERS with whole numbers, e.g. 5x1", ErrBadScenario, s)
	}
	if listers < 1 || buyers < 1 || listers > MaxWorkers || buyers > MaxWorkers {
		return Scenario{}, fmt.Errorf("%w %q: listers and buyers must each be between 1 and %d", ErrBadScenario, s, MaxWorkers)
	}
	return Scenario{Listers: listers, Buyers: buyers}, nil
}

// ParseScenarios parses a comma-separated list of scenarios, keeping the
// order given and dropping repeats.
func ParseScenarios(list string) ([]Scenario, error) {
	var out []Scenario
	seen := map[Scenario]bool{}
	for part := range strings.SplitSeq(list, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		sc, err := ParseScenario(part)
		if err != nil {
			return nil, err
		}
		if !seen[sc] {
			seen[sc] = true
			out = append(out, sc)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no scenario given", ErrBadScenario)
	}
	return out, nil
}
