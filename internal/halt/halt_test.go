package halt_test

import (
	"fmt"
	"time"

	"github.com/lockmarket/lockmarket/internal/halt"
)

func Example() {
	stop := make(chan struct{})
	fmt.Println(halt.Requested(stop))
	close(stop)
	fmt.Println(halt.Requested(stop))
	halt.Pause(time.Hour, stop) // returns at once: stop is closed
	fmt.Println("paused")
	// Output:
	// false
	// true
	// paused
}
