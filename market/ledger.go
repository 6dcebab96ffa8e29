package market

import "sync"

// Ledger records, on the client side, what a Market acknowledged: users
// created with their funds, items created, listings and sales. The audit
// checks the state in Redis against it. It is safe for concurrent use. A
// nil *Ledger records nothing.
type Ledger struct {
	mu      sync.Mutex
	initial map[string]int64 // user -> funds at creation
	net     map[string]int64 // user -> sum of sales minus purchases
	items   map[string]itemRecord
}

// itemRecord holds the prices an item was listed and sold at, in the order
// acknowledged. Most items are listed and sold once, so two short slices
// cost far less than maps keyed by price.
type itemRecord struct {
	listed, sold []int64
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{initial: map[string]int64{}, net: map[string]int64{}, items: map[string]itemRecord{}}
}

func (l *Ledger) userCreated(id string, funds int64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.initial[id] = funds
	l.mu.Unlock()
}

func (l *Ledger) itemCreated(item string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.items[item] = itemRecord{}
	l.mu.Unlock()
}

func (l *Ledger) listed(item string, price int64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	if r, ok := l.items[item]; ok {
		r.listed = append(r.listed, price)
		l.items[item] = r
	}
	l.mu.Unlock()
}

func (l *Ledger) sold(buyer, seller, item string, price int64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.net[buyer] -= price
	l.net[seller] += price
	if r, ok := l.items[item]; ok {
		r.sold = append(r.sold, price)
		l.items[item] = r
	}
	l.mu.Unlock()
}

// Sales is the number of acknowledged purchases (0 for a nil Ledger).
func (l *Ledger) Sales() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.items {
		n += len(r.sold)
	}
	return n
}
