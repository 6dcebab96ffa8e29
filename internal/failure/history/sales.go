package history

import (
	"context"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/market/markettrace"
)

// Sale names a sale as its receipt records it.
type Sale struct {
	Buyer, Seller, Item string
	Price               int64
}

func (s Sale) String() string {
	return fmt.Sprintf("%s bought %s from %s at %d", s.Buyer, s.Item, s.Seller, s.Price)
}

// saleOf is the sale purchase op asks for.
func saleOf(op Op) Sale {
	return Sale{Buyer: op.Buyer, Seller: op.Seller, Item: op.Item, Price: op.Price}
}

// readSalesChunk is how many receipts ReadSales reads per round trip (a
// variable so that a test can read in small chunks).
var readSalesChunk int64 = 10_000

// ReadSales reads every receipt of market name (its markettrace.Keys.Sales
// stream) and counts them per sale.
func ReadSales(ctx context.Context, rdb redis.Cmdable, name string) (map[Sale]int, error) {
	key := markettrace.NewKeys(name).Sales()
	out := map[Sale]int{}
	start := "-"
	for {
		msgs, err := rdb.XRangeN(ctx, key, start, "+", readSalesChunk).Result()
		if err != nil {
			return nil, fmt.Errorf("history: read receipts: %w", err)
		}
		for _, msg := range msgs {
			field := func(k string) string { s, _ := msg.Values[k].(string); return s }
			price, err := strconv.ParseInt(field("price"), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("history: receipt %s has price %q", msg.ID, field("price"))
			}
			out[Sale{Buyer: field("buyer"), Seller: field("seller"), Item: field("item"), Price: price}]++
		}
		if int64(len(msgs)) < readSalesChunk {
			return out, nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

// SalesReport is what CheckSales found.
type SalesReport struct {
	// Counts sums the purchases by outcome.
	Counts
	// Receipts is the number of receipts.
	Receipts int `json:"receipts"`
	// Lost counts acknowledged purchases without their receipt.
	Lost int `json:"lost"`
	// Duplicated counts receipts that no purchase accounts for: a
	// purchase applied twice (or a sale nobody asked for).
	Duplicated int `json:"duplicated"`
	// RefusedApplied counts purchases whose final answer was a refusal
	// although an earlier attempt of theirs, of unknown outcome, had
	// applied (a retry without an operation ID finds its own sale done).
	RefusedApplied int `json:"refused_applied"`
	// Details describes the first findings (at most 20).
	Details []string `json:"details,omitempty"`
}

func (r *SalesReport) note(format string, args ...any) {
	if len(r.Details) < 20 {
		r.Details = append(r.Details, fmt.Sprintf(format, args...))
	}
}

// CheckSales accounts for every receipt with the recorded purchases that
// asked for its sale, and reports what does not add up: every
// acknowledged purchase needs a receipt (else it was lost); a receipt
// beyond those is accounted for by a purchase of unknown outcome, else by
// one refused after an attempt of unknown outcome (Op.Retried: the
// refusal was wrong, it had applied), else it was applied twice. List
// operations in ops are ignored.
//
// Sales are told apart by buyer, seller, item and price: a workload in
// which one buyer buys one item from one seller at one price more than
// once is accounted per sale, not per listing.
func CheckSales(ops []Op, receipts map[Sale]int) SalesReport {
	var rep SalesReport
	type group struct{ acked, unknown, refusedRetried int }
	groups := map[Sale]*group{}
	var purchases []Op
	for _, op := range ops {
		if op.Kind != Purchase {
			continue
		}
		purchases = append(purchases, op)
		s := saleOf(op)
		g := groups[s]
		if g == nil {
			g = &group{}
			groups[s] = g
		}
		switch op.Outcome {
		case Ok:
			g.acked++
		case Fail:
			if op.Retried {
				g.refusedRetried++
			}
		default:
			g.unknown++
		}
	}
	rep.Counts = Count(purchases)
	for s, n := range receipts {
		rep.Receipts += n
		g := groups[s]
		if g == nil {
			g = &group{}
		}
		extra := max(0, n-g.acked)
		extra -= min(extra, g.unknown)
		wrong := min(extra, g.refusedRetried)
		rep.RefusedApplied += wrong
		if wrong > 0 {
			rep.note("%s: refused on a retry, but applied", s)
		}
		if extra -= wrong; extra > 0 {
			rep.Duplicated += extra
			rep.note("%s: %d receipts, %d acknowledged", s, n, g.acked)
		}
	}
	for s, g := range groups {
		if lost := g.acked - receipts[s]; lost > 0 {
			rep.Lost += lost
			rep.note("%s: acknowledged, no receipt", s)
		}
	}
	return rep
}
