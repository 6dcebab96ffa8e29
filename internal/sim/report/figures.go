package report

import (
	"fmt"
	"math"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/sim/book"
)

// fmtFigure formats a book figure as a whole number with thousands
// separators, e.g. "145,000" or "<200". A bound is rounded up, so that a
// scaled "<10" reads "<1", never "<0".
func fmtFigure(f book.Figure) string {
	if f.UpperBound() {
		return f.Qualifier + output.Thousands(int64(math.Ceil(f.Value-1e-9)))
	}
	return output.Thousands(int64(math.Round(f.Value)))
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
