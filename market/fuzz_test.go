package market_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// validIDBytes is an independent statement of the ID rule: 1 to 64 bytes,
// each one of A-Z a-z 0-9 _ -.
func validIDBytes(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

var idSeeds = []string{
	"", "a", "ItemA", "user_1-x", "a.b", "ItemA.Frank", strings.Repeat("x", 64), strings.Repeat("x", 65),
	"héllo", "spa ce", "tab\t", "nul\x00", "new\nline", "{market}", "*", "../etc", "\xff\xfe", "Ⅻ", "a\u200bb",
}

func FuzzValidID(f *testing.F) {
	for _, s := range idSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		err := market.ValidID("item", id)
		if want := validIDBytes(id); (err == nil) != want {
			t.Fatalf("ValidID(%q) = %v, want valid=%v", id, err, want)
		}
		if err != nil {
			if !errors.Is(err, market.ErrInvalid) {
				t.Fatalf("ValidID(%q) = %v, does not wrap ErrInvalid", id, err)
			}
			// The message quotes at most 80 bytes of the input, each
			// escaped to at most 4 characters: it stays bounded.
			if len(err.Error()) > 512 {
				t.Fatalf("error message of %d bytes echoes too much input", len(err.Error()))
			}
		}
	})
}

func FuzzValidPrice(f *testing.F) {
	for _, p := range []int64{0, 1, -1, 10, market.MaxPrice, market.MaxPrice + 1, math.MaxInt64, math.MinInt64} {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, p int64) {
		err := market.ValidPrice(p)
		if want := p >= 1 && p <= market.MaxPrice; (err == nil) != want {
			t.Fatalf("ValidPrice(%d) = %v, want valid=%v", p, err, want)
		}
		if err != nil && !errors.Is(err, market.ErrInvalid) {
			t.Fatalf("ValidPrice(%d) = %v, does not wrap ErrInvalid", p, err)
		}
	})
}

// FuzzPurchaseArgs calls Purchase and List with arbitrary arguments on a
// small market (miniredis, reset for every input): invalid arguments are
// refused with ErrInvalid before Redis is touched, every other outcome is
// one of the market's refusals or a success, and the audit stays clean.
func FuzzPurchaseArgs(f *testing.F) {
	f.Add("b1", "s1", "it1", int64(10), uint8(0), false)
	f.Add("b1", "s1", "it1", int64(10), uint8(3), false)
	f.Add("s1", "s1", "it1", int64(10), uint8(1), false)
	f.Add("b1", "s1", "it1", int64(11), uint8(2), false)
	f.Add("b1", "s1", "it1.s1", int64(10), uint8(0), false)
	f.Add("poor", "s1", "it1", int64(10), uint8(0), false)
	f.Add("nobody", "s1", "it1", int64(10), uint8(3), false)
	f.Add("s1", "s1", "it2", int64(5), uint8(0), true)
	f.Add("s1", "s1", "it1", int64(5), uint8(2), true)
	f.Add("", "", "", int64(0), uint8(0), true)
	f.Add("b1", "s1", "it1", int64(math.MinInt64), uint8(1), false)
	f.Add("b1\x00", "s1", "it1", int64(10), uint8(0), false)
	b := redistest.Mini(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, buyer, seller, item string, price int64, strategy uint8, list bool) {
		b.Mini.FlushAll()
		s := market.Strategies[int(strategy)%len(market.Strategies)]
		m, err := newMarket(b.Client, "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range []struct {
			id    string
			funds int64
		}{{"s1", 0}, {"b1", 100}, {"poor", 1}} {
			if _, err := m.CreateUser(ctx, u.id, u.id, u.funds); err != nil {
				t.Fatal(err)
			}
		}
		for _, it := range []string{"it1", "it2"} {
			if err := m.GrantItem(ctx, "s1", it); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := m.List(ctx, s, "s1", "it1", 10); err != nil {
			t.Fatal(err)
		}
		before := b.Mini.Dump()

		if list {
			_, err = m.List(ctx, s, seller, item, price)
		} else {
			_, err = m.Purchase(ctx, s, buyer, seller, item, price)
		}
		invalid := market.ValidID("seller", seller) != nil || market.ValidID("item", item) != nil ||
			market.ValidPrice(price) != nil
		if !list {
			invalid = invalid || market.ValidID("buyer", buyer) != nil || buyer == seller
		}
		switch {
		case invalid:
			if !errors.Is(err, market.ErrInvalid) {
				t.Fatalf("invalid arguments: err = %v, want ErrInvalid", err)
			}
			if after := b.Mini.Dump(); after != before {
				t.Fatalf("a refused request changed the data:\nbefore %s\nafter %s", before, after)
			}
		case err == nil:
		case errors.Is(err, market.ErrListingNotFound), errors.Is(err, market.ErrPriceChanged),
			errors.Is(err, market.ErrInsufficientFunds), errors.Is(err, market.ErrUserNotFound),
			errors.Is(err, market.ErrItemNotOwned):
			if after := b.Mini.Dump(); after != before {
				t.Fatalf("refused with %v but the data changed", err)
			}
		default:
			t.Fatalf("unexpected error: %v", err)
		}
		rep, err := m.Audit(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Total() != 0 {
			t.Fatalf("audit: %+v %q", rep.Violations, rep.Details)
		}
	})
}
