// Package report turns the simulator's results into a document (the JSON
// schema of the design) and renders it as a terminal table, markdown, CSV,
// JSON and SVG charts.
package report

import (
	"fmt"
	"math"

	"github.com/lockmarket/lockmarket/internal/report/latency"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/internal/sim/book"
	"github.com/lockmarket/lockmarket/market"
)

// Document is one simulator run: where it ran and one row per cell.
type Document struct {
	// Env is where the run ran: its "redis" and "machine" blocks.
	output.Env
	// DurationS is the configured duration of each cell, in seconds.
	DurationS float64 `json:"duration_s"`
	// Illustrative is set when the figures come from miniredis.
	Illustrative bool `json:"illustrative"`
	// Seed and Pick are the workload parameters.
	Seed uint64 `json:"seed"`
	Pick int    `json:"pick"`
	// Interrupted is set when the run was stopped before its last cell.
	Interrupted bool `json:"interrupted,omitempty"`
	// Client is the client form every cell used: lean or book (see
	// markettrace.ClientForm).
	Client string `json:"client"`
	// Profile is the -profile the run used, if any.
	Profile string `json:"profile,omitempty"`
	// RTTMs is the round trip to Redis measured before the first cell
	// (PING p50, through the delay proxy when there is one);
	// RTTConfiguredMs the round trip the proxy was asked to add (0: no
	// proxy).
	RTTMs           float64 `json:"rtt_ms"`
	RTTConfiguredMs float64 `json:"rtt_configured_ms"`
	// JitterMs is the mean of the random part the proxy added to each
	// reply's delay (an exponential draw; 0: none).
	JitterMs float64 `json:"jitter_ms,omitempty"`
	// Rounds is how many slices each cell's duration was split into, the
	// slices of a scenario run in turn across the strategies (0: a run
	// saved before slices, one slice per cell).
	Rounds int `json:"rounds,omitempty"`
	// LoadStart and LoadEnd are the machine's load when the run started
	// and when it ended (absent where the OS does not report it).
	LoadStart *Load `json:"load_start,omitempty"`
	LoadEnd   *Load `json:"load_end,omitempty"`
	// LoadPeak is the highest 1-minute load average read during the run
	// (every LoadEvery), and LoadSamples every reading, so that a burst
	// between the start and the end shows.
	LoadPeak    *Load        `json:"load_peak,omitempty"`
	LoadSamples []LoadSample `json:"load_samples,omitempty"`
	Rows        []Row        `json:"rows"`
	// Verdict is the reading's conclusion, written by JSON (a document
	// read back has it recomputed from its rows).
	Verdict *Verdict `json:"verdict,omitempty"`
}

// LinkText says in one line how the run's clients reached Redis.
func LinkText(doc Document) string {
	client := doc.Client
	if client == "" {
		client = "lean"
	}
	var s string
	if doc.RTTMs > 0 {
		s = fmt.Sprintf("client %s, round trip %s (PING p50", client, fmtMs(doc.RTTMs, 1))
		if doc.RTTConfiguredMs > 0 {
			s += fmt.Sprintf(", through a proxy adding %s", fmtMs(doc.RTTConfiguredMs, 1))
			if doc.JitterMs > 0 {
				s += fmt.Sprintf(" + exp(mean %s)", fmtMs(doc.JitterMs, 2))
			}
		}
		s += ")"
	} else {
		// A run saved before round trips were measured.
		s = fmt.Sprintf("client %s, round trip not measured", client)
	}
	if doc.Profile != "" {
		s += ", profile " + doc.Profile
	}
	return s
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
	// Conflict is what the Watch strategy's purchases measured of their
	// conflicts, beside the model's prediction; absent for the other
	// strategies.
	Conflict *Conflict `json:"conflict,omitempty"`

	// Markets is how many markets ran at once in the cell (absent for
	// one); the counts above are summed over them.
	Markets int `json:"markets,omitempty"`
	// Prefill is the listings each market held before the workers
	// started; PrefillS the seconds it took to create them.
	Prefill  int     `json:"prefill,omitempty"`
	PrefillS float64 `json:"prefill_s,omitempty"`
	// RedisUsedMemoryBeforeBytes and RedisUsedMemoryBytes are Redis's
	// used_memory (all masters) before and after the prefill;
	// BytesPerListing their difference per prefilled listing.
	RedisUsedMemoryBeforeBytes int64   `json:"redis_used_memory_before_bytes,omitempty"`
	RedisUsedMemoryBytes       int64   `json:"redis_used_memory_bytes,omitempty"`
	BytesPerListing            float64 `json:"bytes_per_listing,omitempty"`
	// MarketZSetBytes and ItemsSetBytes are MEMORY USAGE of the market
	// ZSET and the created-items SET after the prefill (summed).
	MarketZSetBytes int64 `json:"market_zset_bytes,omitempty"`
	ItemsSetBytes   int64 `json:"items_set_bytes,omitempty"`
	// ClientRSSBytes is the simulator's resident set size when the
	// workers stopped; ClientCPUS the CPU seconds it used while they ran.
	ClientRSSBytes int64   `json:"client_rss_bytes,omitempty"`
	ClientCPUS     float64 `json:"client_cpu_s,omitempty"`
	// RedisCPUS is the CPU seconds Redis used (all masters) while the
	// workers ran, RedisCommands the commands it processed, RedisMasters
	// how many servers those figures cover.
	RedisCPUS     float64 `json:"redis_cpu_s,omitempty"`
	RedisCommands int64   `json:"redis_commands,omitempty"`
	RedisMasters  int     `json:"redis_masters,omitempty"`

	// Slices are the figures of each slice of the cell, in the order they
	// ran (see Document.Rounds); BoughtPerSMin and BoughtPerSMax, and
	// OpsPerSMin and OpsPerSMax, are their range.
	Slices        []Slice `json:"slices,omitempty"`
	BoughtPerSMin float64 `json:"bought_per_s_min,omitempty"`
	BoughtPerSMax float64 `json:"bought_per_s_max,omitempty"`
	OpsPerSMin    float64 `json:"ops_per_s_min,omitempty"`
	OpsPerSMax    float64 `json:"ops_per_s_max,omitempty"`
}

// Label names the cell's workload for charts: the scenario, plus the
// markets and the prefill when the run used them.
func (r Row) Label() string {
	l := r.Scenario
	if r.Markets > 1 {
		l += fmt.Sprintf(" x%d markets", r.Markets)
	}
	if r.Prefill > 0 {
		l += " +" + output.Thousands(int64(r.Prefill))
	}
	return l
}

// RedisCommandsPerS is RedisCommands per second of the measured time
// (the drain included, since the counters are read after it).
func (r Row) RedisCommandsPerS() float64 {
	if t := r.ElapsedS + r.DrainS; t > 0 {
		return float64(r.RedisCommands) / t
	}
	return 0
}

// HasResources reports whether the run used -markets or -prefill, whose
// memory and CPU figures the views then show.
func (d Document) HasResources() bool {
	for _, r := range d.Rows {
		if r.Markets > 1 || r.Prefill > 0 {
			return true
		}
	}
	return false
}

// Conflict is a row's sim.Conflict: the rate λ of writes to the keys a
// purchase WATCHes and the mean conflict window w its EXECs had, what
// share of them committed, and what the model e^(−λ·w) predicts.
type Conflict struct {
	WriteRatePerS float64 `json:"write_rate_per_s"`
	WindowMs      float64 `json:"window_ms"`
	// Exposure is λ·w.
	Exposure float64 `json:"exposure"`
	Execs    int64   `json:"execs"`
	// PCommit is the share of EXECs that committed; PCommitModel the
	// model's e^(−λ·w).
	PCommit      float64 `json:"p_commit"`
	PCommitModel float64 `json:"p_commit_model"`
	// RetriesPerCommitModel is the model's 1/P − 1.
	RetriesPerCommitModel float64 `json:"retries_per_commit_model"`
	// ModelError is PCommitModel/PCommit − 1; absent when nothing
	// committed.
	ModelError *float64 `json:"model_error,omitempty"`
}

// newConflict makes a row's Conflict of the cell's.
func newConflict(c sim.Conflict) *Conflict {
	p, _ := c.Measured()
	out := &Conflict{
		WriteRatePerS: round3(c.WriteRate), WindowMs: latency.Milliseconds(c.Window), Exposure: round6(c.Exposure()),
		Execs: c.Execs, PCommit: p, PCommitModel: c.Predicted(),
		RetriesPerCommitModel: round3(c.PredictedRetries()),
	}
	if e, ok := c.Error(); ok {
		e = round6(e)
		out.ModelError = &e
	}
	return out
}

// round6 keeps six decimals, for probabilities and sub-millisecond times.
func round6(v float64) float64 { return math.Round(v*1e6) / 1e6 }

// Book is the book's published row for a cell, for 60 s. Listed, Bought
// and Retries are counts, AvgWaitMs is in milliseconds; a field named in
// UpperBounds was printed as a bound ("<200"), and Published has every
// field as printed (the wait without its unit, which is in the key).
type Book struct {
	Listed      float64           `json:"listed"`
	Bought      float64           `json:"bought"`
	Retries     float64           `json:"retries"`
	AvgWaitMs   float64           `json:"avg_wait_ms"`
	UpperBounds []string          `json:"upper_bounds,omitempty"`
	Published   map[string]string `json:"published"`
	Source      string            `json:"source"`
	DurationS   float64           `json:"duration_s"`
}

// round3 keeps three decimals, enough for rates.
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
		ElapsedS:    latency.Seconds(r.Elapsed),
		DrainS:      latency.Seconds(r.Drain),
		Failures:    r.Failed,
		FailedLists: r.FailedLists, ListRetries: r.ListRetries, ListLockWaits: r.ListLockWaits,
		LockLost: r.LockLost, EmptyPolls: r.EmptyPolls,
		Audit: r.Audit.Violations, AuditDetails: r.Audit.Details,
		Error: r.FirstError, Interrupted: r.Interrupted,
	}
	if len(r.Markets) > 1 {
		row.Markets = len(r.Markets)
	}
	row.Prefill = r.Prefill
	row.PrefillS = latency.Seconds(r.PrefillTime)
	if v, ok := r.PrefillBytesPerListing(); ok {
		row.BytesPerListing = round3(v)
		row.RedisUsedMemoryBeforeBytes = r.Server.Before.UsedMemory
		row.RedisUsedMemoryBytes = r.Server.Prefilled.UsedMemory
	}
	row.MarketZSetBytes, row.ItemsSetBytes = r.MarketBytes, r.ItemsBytes
	row.ClientRSSBytes = r.ClientRSS
	row.ClientCPUS = latency.Seconds(r.ClientCPU)
	row.RedisCPUS = latency.Seconds(r.RedisCPU())
	row.RedisCommands = r.RedisCommands()
	if row.RedisCommands > 0 {
		row.RedisMasters = r.Server.After.Masters
	}
	if r.Wait != nil {
		row.AvgWaitMs = latency.Milliseconds(r.Wait.Mean())
		row.P50WaitMs = latency.Milliseconds(r.Wait.Quantile(0.50))
		row.P99WaitMs = latency.Milliseconds(r.Wait.Quantile(0.99))
		row.MaxWaitMs = latency.Milliseconds(r.Wait.Max())
	}
	if v, ok := r.RetriesPerPurchase(); ok {
		v = round3(v)
		row.RetriesPerPurchase = &v
	}
	if c, ok := r.Conflict(); ok {
		row.Conflict = newConflict(c)
	}
	if b, ok := book.Lookup(r.Scenario.Listers, r.Scenario.Buyers, r.Strategy); ok {
		row.Book = &Book{
			Listed: b.Listed.Value, Bought: b.Bought.Value, Retries: b.Retries.Value, AvgWaitMs: b.AvgWaitMs.Value,
			UpperBounds: b.UpperBounds(), Published: published(b), Source: b.Source,
			DurationS: latency.Seconds(book.Duration),
		}
	}
	return row
}

// bookCell returns the book's row behind a row, if any.
func (r Row) bookCell() (book.Cell, bool) {
	return book.Lookup(r.Listers, r.Buyers, market.Strategy(r.Strategy))
}

// Violations adds up the violations of every row.
func (d Document) Violations() int {
	n := 0
	for _, r := range d.Rows {
		n += r.Violations
	}
	return n
}
