package targets

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
	"github.com/redis/go-redis/v9"
)

// The market workload: buyers A and B, each with buyerFunds, both try to
// buy the sword, which the seller listed at swordPrice; client C, with
// three clients, is the seller listing its shield meanwhile.
const (
	marketSeller = "seller"
	marketSword  = "sword"
	marketShield = "shield"
	swordPrice   = 10
	shieldPrice  = 20
	buyerFunds   = 100
)

// Strategy returns the market (package market) under strategy s, with
// market.WithFencing when fencing: clients on one market, A and B both
// trying to buy the same listing while C (with three clients) lists
// another item of the same seller, with the real List and Purchase. The
// market's lock lease is the model's TTL and its lock waits sleep on the
// virtual clock, each for the model's Retry (its backoff's jitter is not
// explored); its timeouts are long enough never to end an operation
// within a schedule. The property
// checked is the resource: at the end, (*market.Market).Audit finds no
// violation and the listing was sold at most once. Coarse and Fine
// without fencing break it under a pause past the lease; Watch, Lua and
// the fenced locks keep it.
func Strategy(s market.Strategy, fencing bool) (*sched.Target, error) {
	if _, err := market.ParseStrategy(string(s)); err != nil {
		return nil, err
	}
	name := "strategy " + string(s)
	about := "the market's List and Purchase under " + string(s)
	property := result.Resource
	if fencing {
		name += " fenced"
		about += ", with market.WithFencing"
	}
	t := &sched.Target{Name: name,
		About:    about + " (A and B buy the same listing; C lists another item)",
		Property: property, Clients: 3, Checks: []string{result.Resource},
		Workload: sched.Workload{
			Run: func(ctx context.Context, c *sched.Client) error {
				return tradeInMarket(ctx, c, s, fencing)
			},
			Prepare: setupMarket, PrepareOnce: true, End: marketViolations, Resource: marketResource,
		},
		Traits: sched.Traits{
			SteadySleeps: true, Interchangeable: []int{0, 1}, Mentions: buyerMentions(),
		},
	}
	if s == market.Coarse || s == market.Fine {
		// The lock is taken inside Purchase and List: who holds it is read
		// from their commands on its key.
		t.Checks = []string{result.MutualExclusion, result.Resource}
		t.Traits.InferHolds = true
	}
	return t, nil
}

// buyerMentions is how the market's commands write a buyer's name: in its
// keys (its funds, its inventory), in the receipt the purchase adds to the
// stream of sales (and XINFO STREAM shows), and among the purchase script's arguments (the item,
// the price, the buyer, the seller). The buyers A and B differ in nothing
// else: the same funds, the same purchase, each its own keys; C, the
// seller listing its shield, is never renamed.
func buyerMentions() []sched.Mention {
	return []sched.Mention{
		{Before: "users:"}, {Before: "inventory:"}, {Before: " buyer ", After: " "},
		{Before: "buyer:", After: " "},
		{
			Before: fmt.Sprintf(" %s %d ", marketSword, swordPrice),
			After:  " " + marketSeller + " ",
		},
	}
}

// setupMarket creates the market of namespace ns: the seller and the two
// buyers, the seller's sword and shield, and the sword listed.
func setupMarket(ctx context.Context, rdb redis.UniversalClient, ns string) error {
	mk, err := market.New(rdb, marketName(ns))
	if err != nil {
		return err
	}
	for _, u := range []string{marketSeller, sched.ClientName(0), sched.ClientName(1)} {
		funds := int64(buyerFunds)
		if u == marketSeller {
			funds = 0
		}
		if _, err := mk.CreateUser(ctx, u, "user "+u, funds); err != nil {
			return err
		}
	}
	for _, it := range []string{marketSword, marketShield} {
		if err := mk.GrantItem(ctx, marketSeller, it); err != nil {
			return err
		}
	}
	_, err = mk.List(ctx, market.Lua, marketSeller, marketSword, swordPrice)
	return err
}

// tradeInMarket is client c's part under strategy s: the third client
// lists the shield, the others buy the sword. The market's lease is the
// model's TTL (dilated), its timeouts an hour.
func tradeInMarket(ctx context.Context, c *sched.Client, s market.Strategy, fencing bool) error {
	opts := []market.Option{
		market.WithLockTTL(c.Dilate(c.Model().TTL)),
		market.WithTimeouts(time.Hour, time.Hour),
	}
	if fencing {
		opts = append(opts, market.WithFencing())
	}
	mk, err := market.New(c.Redis(), marketName(c.Prefix()), opts...)
	if err != nil {
		return err
	}
	if err := c.Begin(ctx); err != nil {
		return err
	}
	if c.Index() == 2 {
		_, err = mk.List(ctx, s, marketSeller, marketShield, shieldPrice)
	} else {
		_, err = mk.Purchase(ctx, s, c.Name(), marketSeller, marketSword, swordPrice)
	}
	switch {
	case err == nil:
		c.Completed()
	case refused(err):
		// The market said no (the listing was sold, the lock was
		// lost): an answer, not a failure.
	default:
		return err
	}
	return nil
}

// marketViolations is what broke the resource at the end of a schedule:
// the sword bought by both buyers, and what the market's audit found.
func marketViolations(
	ctx context.Context, e *sched.Explorer, snap sched.Snapshot,
) ([]result.Violation, error) {
	var out []result.Violation
	var bought []string
	for _, c := range snap.Clients {
		if c.Index < 2 && c.Completed > 0 {
			bought = append(bought, c.Name)
		}
	}
	if len(bought) > 1 {
		out = append(out, result.Violation{Property: result.Resource, Message: fmt.Sprintf(
			"the %s was sold twice: %s both bought it", marketSword, strings.Join(bought, " and "),
		)})
	}
	mk, err := market.New(e.Redis, marketName(e.KeyPrefix))
	if err != nil {
		return nil, err
	}
	rep, err := mk.Audit(ctx)
	if err != nil {
		return nil, err
	}
	if rep.Total() > 0 && len(out) == 0 {
		out = append(
			out,
			result.Violation{
				Property: result.Resource,
				Message:  "audit: " + e.Target().Short(strings.Join(rep.Details, "; ")),
			},
		)
	} else if rep.Total() > 0 {
		out[0].Message += "; audit: " + e.Target().Short(strings.Join(rep.Details, "; "))
	}
	return out, nil
}

// marketResource describes the market of namespace ns as it stands: what
// is listed, and each user's funds and items.
func marketResource(ctx context.Context, rdb redis.UniversalClient, ns string) (string, error) {
	mk, err := market.New(rdb, marketName(ns))
	if err != nil {
		return "", err
	}
	var parts []string
	for _, u := range []string{sched.ClientName(0), sched.ClientName(1), marketSeller} {
		usr, err := mk.GetUser(ctx, u)
		if err != nil {
			return "", err
		}
		parts = append(
			parts,
			fmt.Sprintf("%s: funds %d, items [%s]", u, usr.Funds, strings.Join(usr.Inventory, " ")),
		)
	}
	ls, _, err := mk.Listings(ctx, 0, 10)
	if err != nil {
		return "", err
	}
	var listed []string
	for _, l := range ls {
		listed = append(listed, fmt.Sprintf("%s at %d", l.Item, l.Price))
	}
	return "listed [" + strings.Join(listed, ", ") + "]; " + strings.Join(parts, "; "), nil
}

// marketName is the market whose keys are the namespace's: a market's
// keys start with "{NAME}:".
func marketName(ns string) string { return strings.TrimSuffix(strings.TrimPrefix(ns, "{"), "}:") }

// refused tells the market's answers (a sentinel of package market, or a
// lock lost under fencing) from failures.
func refused(err error) bool {
	for _, e := range []error{
		market.ErrListingNotFound, market.ErrPriceChanged, market.ErrInsufficientFunds,
		market.ErrItemNotOwned, market.ErrContended, locking.ErrLockLost, locking.ErrNotAcquired} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
