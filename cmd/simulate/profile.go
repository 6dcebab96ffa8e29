package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/market"
)

// profile is a named preset of run flags; flags given on the command line
// override it.
type profile struct {
	client market.ClientForm
	rtt    time.Duration
	// why is the one-line reason printed by -h.
	why string
}

// profiles are the presets -profile names.
//
// book reproduces the shape of the book's tables 6.1-6.3 and of its
// chapter 11 Lua table. The book's rates fix its WATCH window: at 5
// listers and 1 buyer, 331,000 listings in 60 s are λ = 5,517 writes a
// second to the market the buyer WATCHes, and 50,000 retries for fewer
// than 200 purchases mean an EXEC committed less than once in 251 tries,
// e^(−λ·w) < 1/251, so λ·w > 5.5 and w > 1.0 ms. The same buyer made
// 50,200 attempts in 60 s, 1.2 ms each: its window was nearly all of its
// attempt, three of the four round trips of listing 4.6, about 0.33 ms
// each (a Python client's round trip on a busy machine; its 1x1 figures
// give 0.14 ms). So the profile sends the book's command sequences
// (-client book) and adds to each round trip what makes ours cost about
// what the book's did; results/book-profile/ holds the calibration run
// that chose the value among those tried, and its reasoning.
var profiles = map[string]profile{
	"book": {client: market.BookClient, rtt: 300 * time.Microsecond,
		why: "the book's command sequences at about the book's round trip (results/book-profile)"},
}

// profileNames lists the profiles for messages.
func profileNames() string { return strings.Join(slices.Sorted(maps.Keys(profiles)), ", ") }

// describe is the profile's settings as flags.
func (p profile) describe() string {
	return fmt.Sprintf("-client %s -rtt %v", p.client, p.rtt)
}

// profileHelp lists the profiles with their settings for -h.
func profileHelp() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(profiles)) {
		p := profiles[name]
		parts = append(parts, fmt.Sprintf("%s (%s: %s)", name, p.describe(), p.why))
	}
	return strings.Join(parts, ", ")
}
