package sched

import (
	"github.com/lockmarket/lockmarket/internal/explore/search"
)

// ErrNotEnabled is returned by Cut and FindFrom when an action of the
// prefix is not one of those enabled at its turn.
var ErrNotEnabled = search.ErrNotEnabled
