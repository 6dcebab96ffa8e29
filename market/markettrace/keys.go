package markettrace

import (
	"github.com/lockmarket/lockmarket/market"
	"github.com/lockmarket/lockmarket/market/internal/plug"
)

// Keys names each Redis key of one market, in the book's layout behind
// its hash tag (docs/architecture.md has the table): for the tools that
// read a market's state directly (a history checker, a memory probe) or
// change it behind the market's back (a lease made to run out, a test
// that corrupts a user). A user of the market needs none of them;
// market.Keys gives its prefix and pattern.
type Keys struct{ k plug.Keys }

// NewKeys returns the key names of market name.
func NewKeys(name string) Keys { return Keys{plug.NewKeys(name)} }

// KeysOf returns the key names of m.
func KeysOf(m *market.Market) Keys { return NewKeys(m.Name()) }

// Market is the ZSET of listings: member ITEM.SELLER (Member), score
// price.
func (k Keys) Market() string { return k.k.Market() }

// User is the HASH of a user: name, funds, and initial (the funds it was
// created with, for the audit).
func (k Keys) User(id string) string { return k.k.User(id) }

// Inventory is the SET of item IDs a user owns.
func (k Keys) Inventory(id string) string { return k.k.Inventory(id) }

// MarketLock is the coarse lock over the whole market.
func (k Keys) MarketLock() string { return k.k.MarketLock() }

// ItemLock is the fine-grained lock of one listing.
func (k Keys) ItemLock(item, seller string) string { return k.k.ItemLock(item, seller) }

// UserIDs is the SET of all user IDs (kept for the audit and the API).
func (k Keys) UserIDs() string { return k.k.UserIDs() }

// Items is the SET of all item IDs ever created (kept for the audit).
func (k Keys) Items() string { return k.k.Items() }

// Sales is the STREAM of sale receipts: one entry per purchase (buyer,
// seller, item, price, op), appended in the purchase's own transaction or
// script, so the audit can check every sale from Redis state alone.
func (k Keys) Sales() string { return k.k.Sales() }

// Listed is the HASH item -> number of times the item was listed, counted
// in the listing's own transaction or script (kept for the audit).
func (k Keys) Listed() string { return k.k.Listed() }

// Op is the record of operation id (see market.OpID): what the operation
// was and how it ended, written with the operation's writes, with a TTL.
func (k Keys) Op(id string) string { return k.k.Op(id) }

// Prefix is the common prefix, "{NAME}:" (market.Keys.Prefix).
func (k Keys) Prefix() string { return k.k.Prefix() }
