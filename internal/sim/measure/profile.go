package measure

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/market/markettrace"
)

// Profile is a named preset of run flags; flags given on the command line
// override it.
type Profile struct {
	Client markettrace.ClientForm
	RTT    time.Duration
	Jitter time.Duration
	// Why is the one-line reason printed by -h.
	Why string
}

// profiles are the presets -profile names.
//
// book reproduces the shape of the book's tables 6.1-6.3 and of its
// chapter 11 Lua table: -client book sends the book's command sequences,
// -rtt 1ms adds a round trip and -jitter 250µs a random part to each
// reply's delay. The book's rates say what its WATCH buyer faced: at 5
// listers and 1 buyer, 331,000 listings in 60 s are λ = 5,517 writes a
// second to the market the buyer WATCHes, and 50,000 retries for fewer
// than 200 purchases mean fewer than 1 EXEC in 251 committed; if
// e^(−λ·w) < 1/251, λ·w > 5.5 and w > 1.0 ms, most of the buyer's 1.2 ms
// attempts (50,200 in 60 s). What sets λ·w is the command sequence, not
// the round trip: the book's purchase holds three round trips between
// WATCH and EXEC while each lister writes once per few round trips,
// whatever a round trip costs. The round trip sets how regular the timing
// is and what the book lock's 1 ms sleeps cost beside a round trip; the
// jitter keeps one lister and one buyer from falling into step behind a
// fixed delay (without it WATCH at 1x1 retried 46 times per purchase, the
// book's 3). results/book-profile/ holds the calibrations: the first chose
// 1 ms among 0, 150 µs, 300 µs, 500 µs and 1 ms of round trip; the second
// (jitter/) chose 250 µs among jitters of 0, 250 µs, 500 µs and 1 ms as the
// one closest to the book's ratios of those that met every target, 1x1
// included.
var profiles = map[string]Profile{
	"book": {Client: markettrace.BookClient, RTT: time.Millisecond, Jitter: 250 * time.Microsecond,
		Why: "the book's command sequences, each round trip 1 ms longer plus an exponential jitter of mean 250µs (results/book-profile)"},
}

// LookupProfile is the profile called name.
func LookupProfile(name string) (Profile, bool) {
	p, ok := profiles[name]
	return p, ok
}

// ProfileNames lists the profiles for messages.
func ProfileNames() string { return strings.Join(slices.Sorted(maps.Keys(profiles)), ", ") }

// describe is the profile's settings as flags.
func (p Profile) describe() string {
	if p.Jitter > 0 {
		return fmt.Sprintf("-client %s -rtt %v -jitter %v", p.Client, p.RTT, p.Jitter)
	}
	return fmt.Sprintf("-client %s -rtt %v", p.Client, p.RTT)
}

// ProfileHelp lists the profiles with their settings for -h.
func ProfileHelp() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(profiles)) {
		p := profiles[name]
		parts = append(parts, fmt.Sprintf("%s (%s: %s)", name, p.describe(), p.Why))
	}
	return strings.Join(parts, ", ")
}
