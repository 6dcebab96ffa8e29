package market

import (
	"context"
	"fmt"
	"strconv"
)

// Receipt is the record of one sale, as the purchase wrote it in
// Keys.Sales.
type Receipt struct {
	// ID is the stream entry's ID: the server's time of the sale in ms,
	// and a sequence number.
	ID     string `json:"id"`
	Buyer  string `json:"buyer"`
	Seller string `json:"seller"`
	Item   string `json:"item"`
	Price  int64  `json:"price"`
	// Op is the operation ID the purchase was made with, if any.
	Op string `json:"op,omitempty"`
}

// MaxReceiptScan bounds how many receipts one Receipts call reads, newest
// first, looking for a user's: the record is one stream per market.
const MaxReceiptScan = 100_000

// Receipts returns up to limit receipts of sales user took part in (as
// buyer or seller), newest first. It reads the market's receipts back from
// the newest, at most MaxReceiptScan of them.
func (m *Market) Receipts(ctx context.Context, user string, limit int) ([]Receipt, error) {
	if err := ValidID("user", user); err != nil {
		return nil, err
	}
	if limit < 1 || limit > 1000 {
		return nil, fmt.Errorf("%w: limit %d must be between 1 and 1000", ErrInvalid, limit)
	}
	out := []Receipt{}
	end := "+"
	for scanned := 0; scanned < MaxReceiptScan; {
		msgs, err := m.rdb.XRevRangeN(ctx, m.keys.Sales(), end, "-", 1000).Result()
		if err != nil {
			return nil, err
		}
		for _, msg := range msgs {
			r := Receipt{ID: msg.ID}
			r.Buyer, _ = msg.Values["buyer"].(string)
			r.Seller, _ = msg.Values["seller"].(string)
			r.Item, _ = msg.Values["item"].(string)
			r.Op, _ = msg.Values["op"].(string)
			ps, _ := msg.Values["price"].(string)
			if r.Price, err = strconv.ParseInt(ps, 10, 64); err != nil {
				return nil, fmt.Errorf("receipt %s has price %q: %w", msg.ID, ps, ErrCorrupt)
			}
			if r.Buyer == user || r.Seller == user {
				out = append(out, r)
				if len(out) == limit {
					return out, nil
				}
			}
		}
		scanned += len(msgs)
		if len(msgs) < 1000 {
			break
		}
		end = "(" + msgs[len(msgs)-1].ID
	}
	return out, nil
}
