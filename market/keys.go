package market

import "github.com/lockmarket/lockmarket/market/internal/plug"

// Keys names the Redis keys of one market as a whole: every one begins
// with its Prefix, "{NAME}:", whose hash tag keeps them in one slot of a
// Redis Cluster, and Pattern matches them all. The name of each key (the
// book's layout, in docs/architecture.md) is for the tools that read or
// change a market's state behind its back: package market/markettrace
// gives it.
type Keys struct{ k plug.Keys }

// NewKeys returns the key names of market name.
func NewKeys(name string) Keys { return Keys{plug.NewKeys(name)} }

// Prefix is the common prefix, "{NAME}:".
func (k Keys) Prefix() string { return k.k.Prefix() }

// Pattern is the SCAN pattern that matches every key of the market, and
// only those: "{NAME}:*" with the glob characters of NAME escaped (IDs
// have none today, but the pattern must not depend on it).
func (k Keys) Pattern() string { return k.k.Pattern() }

// member is the listing member of item sold by seller: "ITEM.SELLER".
func member(item, seller string) string { return plug.Member(item, seller) }
