package plug

import "strings"

// Keys is markettrace.Keys, the layout of one market's keys; the market
// names its keys with it. Package market's Keys gives a user its Prefix
// and Pattern.
type Keys struct{ prefix string }

// NewKeys returns the key names of market name.
func NewKeys(name string) Keys { return Keys{prefix: "{" + name + "}:"} }

// Market is markettrace.Keys.Market.
func (k Keys) Market() string { return k.prefix + "market:" }

// User is markettrace.Keys.User.
func (k Keys) User(id string) string { return k.prefix + "users:" + id }

// Inventory is markettrace.Keys.Inventory.
func (k Keys) Inventory(id string) string { return k.prefix + "inventory:" + id }

// MarketLock is markettrace.Keys.MarketLock.
func (k Keys) MarketLock() string { return k.prefix + "lock:market:" }

// ItemLock is markettrace.Keys.ItemLock.
func (k Keys) ItemLock(item, seller string) string {
	return k.prefix + "lock:item:" + Member(item, seller)
}

// UserIDs is markettrace.Keys.UserIDs.
func (k Keys) UserIDs() string { return k.prefix + "userids:" }

// Items is markettrace.Keys.Items.
func (k Keys) Items() string { return k.prefix + "items:" }

// Money is the total money put into the market (kept for the audit).
func (k Keys) Money() string { return k.prefix + "money:" }

// Sales is markettrace.Keys.Sales.
func (k Keys) Sales() string { return k.prefix + "sales:" }

// Listed is markettrace.Keys.Listed.
func (k Keys) Listed() string { return k.prefix + "listed:" }

// Op is markettrace.Keys.Op.
func (k Keys) Op(id string) string { return k.prefix + "op:" + id }

// Prefix is market.Keys.Prefix.
func (k Keys) Prefix() string { return k.prefix }

// Pattern is market.Keys.Pattern.
// Pattern is markettrace.Keys.Pattern.
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
