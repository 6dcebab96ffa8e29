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
	ops     map[string]bool // operation IDs recorded, so a replay counts once
}

// itemRecord holds the prices an item was listed and sold at, in the order
// acknowledged. Most items are listed and sold once, so two short slices
// cost far less than maps keyed by price.
type itemRecord struct {
	listed, sold []int64
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger {
	return &Ledger{initial: map[string]int64{}, net: map[string]int64{}, items: map[string]itemRecord{}, ops: map[string]bool{}}
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

// once reports whether operation op (if it has an ID) is recorded for the
// first time; the caller holds l.mu.
func (l *Ledger) once(op string) bool {
	if op == "" {
		return true
	}
	if l.ops[op] {
		return false
	}
	l.ops[op] = true
	return true
}

func (l *Ledger) listed(op, item string, price int64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.once(op) {
		return
	}
	if r, ok := l.items[item]; ok {
		r.listed = append(r.listed, price)
		l.items[item] = r
	}
}

func (l *Ledger) sold(op, buyer, seller, item string, price int64) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.once(op) {
		return
	}
	l.net[buyer] -= price
	l.net[seller] += price
	if r, ok := l.items[item]; ok {
		r.sold = append(r.sold, price)
		l.items[item] = r
	}
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
