package search_test

import (
	"context"
	"fmt"

	"github.com/lockmarket/lockmarket/internal/explore/search"
)

// Two threads that read then write one counter (a toy system of this
// package's tests): six interleavings, in some of which an update is
// lost. The sleep sets take the two first reads, which commute, in one
// order only.
func ExampleSearch_Exhaustive() {
	for _, sleep := range []bool{false, true} {
		sys := &toy{progs: [][]op{{load(0), inc(0)}, {load(0), inc(0)}}, vars: 1, counter: 0}
		s := search.New([]search.System[choice, move]{sys}, search.Options[move]{Sleep: sleep})
		if err := s.Exhaustive(context.Background(), nil); err != nil {
			fmt.Println(err)
			return
		}
		r := s.Result()
		fmt.Printf("sleep sets %v: %d schedules, %d pruned, coverage %v, lost update in %v\n",
			sleep, r.Schedules, r.Pruned, r.Coverage, r.Violations["lost"].Path)
	}
	// Output:
	// sleep sets false: 6 schedules, 0 pruned, coverage 1, lost update in [T0 T1 T0 T1]
	// sleep sets true: 4 schedules, 0 pruned, coverage 1, lost update in [T0 T1 T0 T1]
}
