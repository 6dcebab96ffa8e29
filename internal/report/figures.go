package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/lockmarket/lockmarket/internal/sim/book"
)

// Thousands formats n with commas between groups of three digits.
func Thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// fmtFigure formats a book figure as a whole number with thousands
// separators, e.g. "145,000" or "<200". A bound is rounded up, so that a
// scaled "<10" reads "<1", never "<0".
func fmtFigure(f book.Figure) string {
	if f.UpperBound() {
		return f.Qualifier + Thousands(int64(math.Ceil(f.Value-1e-9)))
	}
	return Thousands(int64(math.Round(f.Value)))
}

// published returns a book row's figures as printed in the book, keyed
// by their JSON names; the wait's unit is in its key.
func published(c book.Cell) map[string]string {
	return map[string]string{
		"listed":      fmtFigure(c.Listed),
		"bought":      fmtFigure(c.Bought),
		"retries":     fmtFigure(c.Retries),
		"avg_wait_ms": c.AvgWaitMs.Qualifier + trimZeros(fmt.Sprintf("%.3f", c.AvgWaitMs.Value)),
	}
}
