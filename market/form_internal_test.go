package market

import (
	"testing"
	"time"
)

func TestWindowEstimate(t *testing.T) {
	at := func(us int) time.Time { return time.Unix(0, 0).Add(time.Duration(us) * time.Microsecond) }
	tests := []struct {
		name                 string
		watchSent, watchBack int // µs
		execSent, execBack   int
		want                 time.Duration
	}{
		// Ways of 50 µs each: WATCH runs at 50, EXEC at 1050.
		{"symmetric ways", 0, 100, 1000, 1100, 1000 * time.Microsecond},
		// Book form: WATCH, then two reads of 100 µs each before the EXEC.
		{"three round trips", 0, 100, 300, 400, 300 * time.Microsecond},
		// EXEC sent as soon as the WATCH came back: one round trip.
		{"back to back", 0, 100, 100, 200, 100 * time.Microsecond},
		// Replies delayed 1 ms, requests not (the delay proxy): WATCH runs
		// at 10 and comes back at 1020; EXEC sent at 1500 runs at 1510.
		{"delay on the way back", 0, 1020, 1500, 2520, 1500 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := windowEstimate(at(tt.watchSent), at(tt.watchBack), at(tt.execSent), at(tt.execBack))
			if got != tt.want {
				t.Fatalf("window = %v, want %v", got, tt.want)
			}
		})
	}
}
