// Package report turns the simulator's results into a document (the JSON
// schema of the design) and renders it as a terminal table, markdown, CSV,
// JSON and SVG charts.
package report

import (
	"math"
	"time"

	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/market"
)

// Document is one simulator run: where it ran and one row per cell.
type Document struct {
	Redis Redis `json:"redis"`
	// DurationS is the configured duration of each cell, in seconds.
	DurationS float64 `json:"duration_s"`
	// Illustrative is set when the figures come from miniredis.
	Illustrative bool `json:"illustrative"`
	// Seed and Pick are the workload parameters.
	Seed uint64 `json:"seed"`
	Pick int    `json:"pick"`
	// Interrupted is set when the run was stopped before its last cell.
	Interrupted bool  `json:"interrupted,omitempty"`
	Rows        []Row `json:"rows"`
}

// Redis says which Redis the run used.
type Redis struct {
	// Mode is redis-server, miniredis, url or cluster.
	Mode    string `json:"mode"`
	Version string `json:"version"`
}

// Row is one cell: a scenario under a strategy.
type Row struct {
	Scenario        string  `json:"scenario"`
	Listers         int     `json:"listers"`
	Buyers          int     `json:"buyers"`
	Strategy        string  `json:"strategy"`
	Listed          int64   `json:"listed"`
	Bought          int64   `json:"bought"`
	FailedPurchases int64   `json:"failed_purchases"`
	Retries         int64   `json:"retries"`
	LockWaits       int64   `json:"lock_waits"`
	AvgWaitMs       float64 `json:"avg_wait_ms"`
	P50WaitMs       float64 `json:"p50_wait_ms"`
	P99WaitMs       float64 `json:"p99_wait_ms"`
	OpsPerS         float64 `json:"ops_per_s"`
	Violations      int     `json:"violations"`

	// RetriesPerPurchase is retries per bought item; absent when nothing
	// was bought.
	RetriesPerPurchase *float64 `json:"retries_per_purchase,omitempty"`
	BoughtPerS         float64  `json:"bought_per_s"`
	MaxWaitMs          float64  `json:"max_wait_ms"`
	// ElapsedS is the measured time (start to stop signal); DrainS the time
	// the operations in flight at the stop then took.
	ElapsedS      float64           `json:"elapsed_s"`
	DrainS        float64           `json:"drain_s"`
	Failures      sim.Failures      `json:"failures"`
	FailedLists   int64             `json:"failed_lists"`
	ListRetries   int64             `json:"list_retries"`
	ListLockWaits int64             `json:"list_lock_waits"`
	LockLost      int64             `json:"lock_lost"`
	EmptyPolls    int64             `json:"empty_polls"`
	Audit         market.Violations `json:"audit"`
	AuditDetails  []string          `json:"audit_details,omitempty"`
	Error         string            `json:"error,omitempty"`
	Interrupted   bool              `json:"interrupted,omitempty"`
	// Book is the book's row for the cell, as published for 60 s.
	Book *Book `json:"book,omitempty"`
}

// Book is the book's published row for a cell, for 60 s. Listed, Bought
// and Retries are counts, AvgWait is in milliseconds; a field named in
// UpperBounds was printed as a bound ("<200"), and Published has every
// field as printed.
type Book struct {
	Listed      float64           `json:"listed"`
	Bought      float64           `json:"bought"`
	Retries     float64           `json:"retries"`
	AvgWait     float64           `json:"avg_wait"`
	UpperBounds []string          `json:"upper_bounds,omitempty"`
	Published   map[string]string `json:"published"`
	Source      string            `json:"source"`
	DurationS   float64           `json:"duration_s"`
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// round3 keeps three decimals, enough for milliseconds and rates.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// FromResult makes a row of a cell's result.
func FromResult(r sim.Result) Row {
	row := Row{
		Scenario: r.Scenario.String(), Listers: r.Scenario.Listers, Buyers: r.Scenario.Buyers,
		Strategy: string(r.Strategy),
		Listed:   r.Listed, Bought: r.Bought, FailedPurchases: r.Failed.Total(),
		Retries: r.Retries, LockWaits: r.LockWaits,
		OpsPerS:     round3(r.OpsPerSecond()),
		BoughtPerS:  round3(r.BoughtPerSecond()),
		Violations:  r.Audit.Total(),
		ElapsedS:    round3(r.Elapsed.Seconds()),
		DrainS:      round3(r.Drain.Seconds()),
		Failures:    r.Failed,
		FailedLists: r.FailedLists, ListRetries: r.ListRetries, ListLockWaits: r.ListLockWaits,
		LockLost: r.LockLost, EmptyPolls: r.EmptyPolls,
		Audit: r.Audit.Violations, AuditDetails: r.Audit.Details,
		Error: r.FirstError, Interrupted: r.Interrupted,
	}
	if r.Wait != nil {
		row.AvgWaitMs = round3(ms(r.Wait.Mean()))
		row.P50WaitMs = round3(ms(r.Wait.Quantile(0.50)))
		row.P99WaitMs = round3(ms(r.Wait.Quantile(0.99)))
		row.MaxWaitMs = round3(ms(r.Wait.Max()))
	}
	if v, ok := r.RetriesPerPurchase(); ok {
		v = round3(v)
		row.RetriesPerPurchase = &v
	}
	if b, ok := sim.Book(r.Scenario, r.Strategy); ok {
		row.Book = &Book{
			Listed: b.Listed.Value, Bought: b.Bought.Value, Retries: b.Retries.Value, AvgWait: b.AvgWaitMs.Value,
			UpperBounds: b.UpperBounds(), Published: b.Published(), Source: b.Source,
			DurationS: sim.BookDuration.Seconds(),
		}
	}
	return row
}

// bookCell returns the sim.BookCell behind a row, if any.
func (r Row) bookCell() (sim.BookCell, bool) {
	return sim.Book(sim.Scenario{Listers: r.Listers, Buyers: r.Buyers}, market.Strategy(r.Strategy))
}

// Violations adds up the violations of every row.
func (d Document) Violations() int {
	n := 0
	for _, r := range d.Rows {
		n += r.Violations
	}
	return n
}
