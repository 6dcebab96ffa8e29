package api

import (
	"time"

	"github.com/lockmarket/lockmarket/internal/sim"
	"github.com/lockmarket/lockmarket/internal/sim/report"
	"github.com/lockmarket/lockmarket/market"
)

// RushRequest is the body of POST /api/rush. Buyers and DurationMS are
// required; the handler checks the bounds and makes a RushConfig of it.
type RushRequest struct {
	Buyers     *int64   `json:"buyers"`
	Listers    *int64   `json:"listers"`
	DurationMS *int64   `json:"duration_ms"`
	Strategies []string `json:"strategies"`
	RTTMS      *float64 `json:"rtt_ms"`
}

// RushConfig is a validated rush: Buyers and Listers in a fresh market of
// each strategy of Strategies in turn, for Duration in all, every command
// delayed by a round trip of RTT (0: none).
type RushConfig struct {
	Buyers, Listers int
	Duration        time.Duration
	RTT             time.Duration
	Strategies      []market.Strategy
}

// RushStatus is the answer of POST, GET and DELETE /api/rush: the last
// rush, live while it runs.
type RushStatus struct {
	ID    string `json:"id,omitempty"`
	State string `json:"state"`
	// Buyers and Listers run in each strategy's market.
	Buyers  int `json:"buyers"`
	Listers int `json:"listers"`
	// DurationMS is the whole rush; each strategy runs for
	// StrategyDurationMS of it, one after the other.
	DurationMS         float64 `json:"duration_ms"`
	StrategyDurationMS float64 `json:"strategy_duration_ms"`
	// RTTMS is the round trip added to every command (0: none), through a
	// delay proxy in the service (internal/redis/netdelay); MeasuredRTTMS the
	// PING median through the rush's clients, measured before it starts.
	RTTMS         float64 `json:"rtt_ms"`
	MeasuredRTTMS float64 `json:"measured_rtt_ms"`
	Redis         string  `json:"redis"`
	// LoadStart and LoadEnd are the machine's load when the rush started
	// and when it ended (absent where the OS reports none, LoadEnd while
	// it runs): on a busy machine one rush's figures move from run to run.
	LoadStart  *report.Load   `json:"load_start,omitempty"`
	LoadEnd    *report.Load   `json:"load_end,omitempty"`
	Error      string         `json:"error,omitempty"`
	Strategies []RushStrategy `json:"strategies"`
}

// RushStrategy is one strategy's run in its own fresh market.
type RushStrategy struct {
	Strategy  market.Strategy `json:"strategy"`
	State     string          `json:"state"`
	Market    string          `json:"market"`
	ElapsedMS float64         `json:"elapsed_ms"`
	Listed    int64           `json:"listed"`
	Bought    int64           `json:"bought"`
	// Failed counts purchases that did not buy (the listing was gone, the
	// lock or transaction could not be had in time, ...).
	Failed int64 `json:"failed"`
	// LostToAnotherBuyer counts the failed purchases whose listing another
	// buyer had bought (or the lister repriced) first: the market working,
	// not an error. Until the strategy is done, when the failures are told
	// apart, it is every failed purchase.
	LostToAnotherBuyer int64   `json:"lost_to_another_buyer"`
	PurchasesPerS      float64 `json:"purchases_per_s"`
	// Retries are EXECs aborted by WATCH during purchases; LockWaits
	// failed lock attempts before a purchase held its lock.
	Retries              int64   `json:"retries"`
	RetriesPerPurchase   float64 `json:"retries_per_purchase"`
	LockWaits            int64   `json:"lock_waits"`
	LockWaitsPerPurchase float64 `json:"lock_waits_per_purchase"`
	// WaitSamples is how many successful purchases the wait figures are
	// taken from.
	WaitSamples uint64  `json:"wait_samples"`
	MeanWaitMS  float64 `json:"mean_wait_ms"`
	P50WaitMS   float64 `json:"p50_wait_ms"`
	P99WaitMS   float64 `json:"p99_wait_ms"`
	// Failures and AuditViolations are known once the strategy is done.
	Failures        *sim.Failures `json:"failures,omitempty"`
	AuditViolations int           `json:"audit_violations"`
	// Series is purchases per second over time, one point per interval.
	Series []RushPoint `json:"series"`
}

// RushPoint is one point of a strategy's series: the purchases per second
// of the interval that ended TMS into the strategy's run.
type RushPoint struct {
	TMS           float64 `json:"t_ms"`
	PurchasesPerS float64 `json:"purchases_per_s"`
}
