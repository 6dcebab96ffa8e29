package plumbing

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// TestArgString checks that an argument is written as fmt.Sprint writes
// it, for the kinds written without fmt and for others.
func TestArgString(t *testing.T) {
	type named string
	for _, a := range []any{
		"", "SET", "{explore-1}:lock", 0, -1, math.MaxInt, math.MinInt, int64(math.MinInt64),
		int32(-7), uint64(math.MaxUint64), uint32(9), true, false, []byte("ab"), 1.5, 1e21,
		float32(0.1), time.Second, named("x"), nil, struct{ A int }{3},
	} {
		if got, want := argString(a), fmt.Sprint(a); got != want {
			t.Errorf("argString(%#v) = %q, want %q", a, got, want)
		}
	}
}
