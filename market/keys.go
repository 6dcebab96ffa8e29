package market

import (
	"strings"

	"github.com/lockmarket/lockmarket/market/internal/plug"
)

// Keys names the Redis keys of one market (book layout, behind {NAME}).
type Keys struct{ name, prefix string }

// NewKeys returns the key names of market name.
func NewKeys(name string) Keys { return Keys{name: name, prefix: "{" + name + "}:"} }

// Market is the ZSET of listings: member ITEM.SELLER, score price.
func (k Keys) Market() string { return k.prefix + "market:" }

// User is the HASH of a user: name, funds.
func (k Keys) User(id string) string { return k.prefix + "users:" + id }

// Inventory is the SET of item IDs a user owns.
func (k Keys) Inventory(id string) string { return k.prefix + "inventory:" + id }

// MarketLock is the coarse lock over the whole market.
func (k Keys) MarketLock() string { return k.prefix + "lock:market:" }

// ItemLock is the fine-grained lock of one listing.
func (k Keys) ItemLock(item, seller string) string {
	return k.prefix + "lock:item:" + member(item, seller)
}

// UserIDs is the SET of all user IDs (kept for the audit and the API).
func (k Keys) UserIDs() string { return k.prefix + "userids:" }

// Items is the SET of all item IDs ever created (kept for the audit).
func (k Keys) Items() string { return k.prefix + "items:" }

// Money is the total money put into the market (kept for the audit).
func (k Keys) Money() string { return k.prefix + "money:" }

// Sales is the STREAM of sale receipts: one entry per purchase (buyer,
// seller, item, price, op), appended in the purchase's own transaction or
// script, so the audit can check every sale from Redis state alone.
func (k Keys) Sales() string { return k.prefix + "sales:" }

// Listed is the HASH item -> number of times the item was listed, counted
// in the listing's own transaction or script (kept for the audit).
func (k Keys) Listed() string { return k.prefix + "listed:" }

// Op is the record of operation id (see OpID): what the operation was and
// how it ended, written with the operation's writes, with a TTL.
func (k Keys) Op(id string) string { return k.prefix + "op:" + id }

// Prefix is the common prefix, "{NAME}:".
func (k Keys) Prefix() string { return k.prefix }

// member is the listing member of item sold by seller: "ITEM.SELLER".
func member(item, seller string) string { return plug.Member(item, seller) }

// Pattern is the SCAN pattern that matches every key of the market, and
// only those: "{NAME}:*" with the glob characters of NAME escaped (IDs
// have none today, but the pattern must not depend on it).
func (k Keys) Pattern() string {
	var b strings.Builder
	for _, r := range k.prefix {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String() + "*"
}
