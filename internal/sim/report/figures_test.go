package report

import (
	"testing"

	"github.com/lockmarket/lockmarket/internal/sim/book"
	"github.com/lockmarket/lockmarket/market"
)

// TestPublished checks a book row as printed, and a scaled bound.
func TestPublished(t *testing.T) {
	b, ok := book.Lookup(5, 1, market.Watch)
	if !ok {
		t.Fatal("no book cell for 5x1 watch")
	}
	if got := published(b); got["bought"] != "<200" || got["listed"] != "331,000" || got["avg_wait_ms"] != "150" {
		t.Errorf("published = %v", got)
	}
	if got := fmtFigure(b.Bought.Scale(0.5)); got != "<100" {
		t.Errorf("scaled bound = %q, want <100", got)
	}
}

func TestFmtFigure(t *testing.T) {
	tests := []struct {
		f    book.Figure
		want string
	}{
		{book.Figure{Value: 145000}, "145,000"},
		{book.Figure{Value: 12083.4}, "12,083"},
		{book.Figure{Value: 10.0 / 60, Qualifier: "<"}, "<1"},
		{book.Figure{Value: 200 * 5.0 / 60, Qualifier: "<"}, "<17"},
		{book.Figure{Value: 200, Qualifier: "<"}, "<200"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			if got := fmtFigure(tc.f); got != tc.want {
				t.Errorf("fmtFigure() = %q, want %q", got, tc.want)
			}
		})
	}
}
