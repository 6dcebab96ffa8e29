package workload_test

import (
	"fmt"
	"time"

	"github.com/lockmarket/lockmarket/internal/sim/workload"
)

func ExampleRequested() {
	stop := make(chan struct{})
	fmt.Println(workload.Requested(stop))
	close(stop)
	fmt.Println(workload.Requested(stop))
	workload.Pause(time.Hour, stop) // returns at once: stop is closed
	fmt.Println("paused")
	// Output:
	// false
	// true
	// paused
}
