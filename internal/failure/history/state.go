package history

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/market/markettrace"
)

// Setup is what existed before the recorded operations: every user's
// funds and the owner of every item.
type Setup struct {
	// Funds is each user's starting funds.
	Funds map[string]int64
	// Owner is the user whose inventory holds each item at the start.
	Owner map[string]string
}

// NewSetup returns an empty Setup.
func NewSetup() Setup { return Setup{Funds: map[string]int64{}, Owner: map[string]string{}} }

// State is the market's state as read from Redis after the operations.
type State struct {
	// Funds is each user's funds.
	Funds map[string]int64
	// Inventory is the items in each user's inventory, sorted.
	Inventory map[string][]string
	// Listings maps each listing member "ITEM.SELLER" to its price.
	Listings map[string]int64
}

// Places returns, for every item, where it is: "inv:USER" for an
// inventory, "mkt:SELLER:PRICE" for a listing; an item in several places
// has several entries, sorted.
func (s State) Places() map[string][]string {
	out := map[string][]string{}
	for user, items := range s.Inventory {
		for _, it := range items {
			out[it] = append(out[it], placeInv(user))
		}
	}
	for member, price := range s.Listings {
		item, seller, _ := markettrace.SplitMember(member)
		out[item] = append(out[item], placeMkt(seller, price))
	}
	for _, p := range out {
		slices.Sort(p)
	}
	return out
}

func placeInv(user string) string { return "inv:" + user }

func placeMkt(seller string, price int64) string {
	return "mkt:" + seller + ":" + strconv.FormatInt(price, 10)
}

// ReadState reads the funds and inventories of users and all listings of
// the market called name, directly from its keys (the layout documented
// for the market, not the market's own code).
func ReadState(ctx context.Context, rdb redis.UniversalClient, name string, users []string) (State, error) {
	k := markettrace.NewKeys(name)
	st := State{Funds: map[string]int64{}, Inventory: map[string][]string{}, Listings: map[string]int64{}}
	funds := make([]*redis.StringCmd, len(users))
	invs := make([]*redis.StringSliceCmd, len(users))
	var zs *redis.ZSliceCmd
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, u := range users {
			funds[i] = p.HGet(ctx, k.User(u), "funds")
			invs[i] = p.SMembers(ctx, k.Inventory(u))
		}
		zs = p.ZRangeWithScores(ctx, k.Market(), 0, -1)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return st, fmt.Errorf("history: read state: %w", err)
	}
	for i, u := range users {
		f, err := funds[i].Result()
		if errors.Is(err, redis.Nil) {
			continue // user missing: the checker reports it
		}
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return st, fmt.Errorf("history: funds of %s: %q", u, f)
		}
		st.Funds[u] = n
		items := invs[i].Val()
		slices.Sort(items)
		st.Inventory[u] = items
	}
	for _, z := range zs.Val() {
		st.Listings[z.Member.(string)] = int64(z.Score)
	}
	return st, nil
}
