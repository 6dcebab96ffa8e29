package market

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Receipt is the record of one sale, as the purchase wrote it in the
// market's stream of receipts (markettrace.Keys.Sales).
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

// MaxReceiptScan bounds how many receipts one Receipts or ReceiptPage call
// reads, newest first, looking for a user's: the record is one stream per
// market. A page that stops at the bound says where to go on (Next).
const MaxReceiptScan = 10_000

// Receipts returns up to limit receipts of sales user took part in (as
// buyer or seller), newest first, among the market's MaxReceiptScan newest
// receipts.
func (m *Market) Receipts(ctx context.Context, user string, limit int) ([]Receipt, error) {
	p, err := m.ReceiptPage(ctx, user, "", limit)
	return p.Receipts, err
}

// ReceiptPage is one page of a user's receipts.
type ReceiptPage struct {
	// Receipts are the user's, newest first.
	Receipts []Receipt
	// Next, when not empty, is the ID of the last receipt read: older
	// receipts, which may hold more of the user's, follow it (pass it as
	// before). Empty when the stream was read to its start.
	Next string
}

// ReceiptPage returns up to limit receipts of sales user took part in (as
// buyer or seller), newest first, older than the receipt ID before (all
// when before is ""). It reads at most MaxReceiptScan receipts.
func (m *Market) ReceiptPage(ctx context.Context, user, before string, limit int) (ReceiptPage, error) {
	page := ReceiptPage{Receipts: []Receipt{}}
	if err := ValidID("user", user); err != nil {
		return page, err
	}
	if limit < 1 || limit > 1000 {
		return page, fmt.Errorf("%w: limit %d must be between 1 and 1000", ErrInvalid, limit)
	}
	end := "+"
	if before != "" {
		if !ValidReceiptID(before) {
			return page, fmt.Errorf("%w: before %q is not a receipt ID (MS-SEQ)", ErrInvalid, before)
		}
		end = "(" + before
	}
	const batch = 1000
	for scanned := 0; scanned < MaxReceiptScan; {
		msgs, err := m.rdb.XRevRangeN(ctx, m.keys.Sales(), end, "-", batch).Result()
		if err != nil {
			return page, err
		}
		for _, msg := range msgs {
			r := Receipt{ID: msg.ID}
			r.Buyer, _ = msg.Values["buyer"].(string)
			r.Seller, _ = msg.Values["seller"].(string)
			r.Item, _ = msg.Values["item"].(string)
			r.Op, _ = msg.Values["op"].(string)
			ps, _ := msg.Values["price"].(string)
			if r.Price, err = strconv.ParseInt(ps, 10, 64); err != nil {
				return page, fmt.Errorf("%w: receipt %s has price %q", ErrCorrupt, msg.ID, ps)
			}
			page.Next = msg.ID
			if r.Buyer == user || r.Seller == user {
				page.Receipts = append(page.Receipts, r)
				if len(page.Receipts) == limit {
					return page, nil
				}
			}
		}
		scanned += len(msgs)
		if len(msgs) < batch {
			page.Next = "" // read to the start
			break
		}
		end = "(" + msgs[len(msgs)-1].ID
	}
	return page, nil
}

// ValidReceiptID reports whether id has the form of a receipt's ID (a
// stream entry ID, MS-SEQ).
func ValidReceiptID(id string) bool {
	ms, seq, ok := strings.Cut(id, "-")
	_, err1 := strconv.ParseUint(ms, 10, 64)
	_, err2 := strconv.ParseUint(seq, 10, 64)
	return ok && err1 == nil && err2 == nil
}
