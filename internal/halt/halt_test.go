package halt_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
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

func TestSleepEndsWithTheContext(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := halt.Sleep(ended, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on an ended context: %v", err)
	}
	if err := halt.Sleep(context.Background(), time.Nanosecond); err != nil {
		t.Fatalf("Sleep: %v", err)
	}
}
