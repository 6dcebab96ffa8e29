// Package demo is the data the service's demo page starts with: a few
// users with funds and items, some of the items listed.
package demo

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockmarket/lockmarket/market"
)

// user is a user of the demo set-up, with the items it owns and the
// prices at which it lists some of them.
type user struct {
	id, name string
	funds    int64
	items    []string
	listed   map[string]int64 // item -> price
}

var users = []user{
	{"alice", "Alice", 500, []string{"sword", "shield"}, map[string]int64{"sword": 120}},
	{"bob", "Bob", 300, []string{"bow", "arrows"}, map[string]int64{"bow": 80, "arrows": 15}},
	{"carol", "Carol", 200, []string{"potion", "helmet"}, map[string]int64{"potion": 25}},
	{"dave", "Dave", 60, []string{"map", "lantern"}, map[string]int64{"map": 40, "lantern": 35}},
	{"frank", "Frank", 43, []string{"ring"}, nil},
}

// Report says what Seed created.
type Report struct {
	Users, Items, Listings int
}

// Seed creates a few users with funds and items, and lists some of the
// items, so the demo page has something to show. It is idempotent: users
// and items that exist are left alone, and only items it has just created
// are listed.
func Seed(ctx context.Context, m *market.Market, st market.Strategy) (Report, error) {
	var rep Report
	for _, u := range users {
		_, err := m.CreateUser(ctx, u.id, u.name, u.funds)
		switch {
		case err == nil:
			rep.Users++
		case !errors.Is(err, market.ErrAlreadyExists):
			return rep, fmt.Errorf("seed user %s: %w", u.id, err)
		}
		for _, item := range u.items {
			err := m.GrantItem(ctx, u.id, item)
			if errors.Is(err, market.ErrAlreadyExists) {
				continue
			}
			if err != nil {
				return rep, fmt.Errorf("seed item %s: %w", item, err)
			}
			rep.Items++
			price, ok := u.listed[item]
			if !ok {
				continue
			}
			if _, err := m.List(ctx, st, u.id, item, price); err != nil {
				return rep, fmt.Errorf("seed listing %s: %w", item, err)
			}
			rep.Listings++
		}
	}
	return rep, nil
}
