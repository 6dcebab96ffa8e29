package latency_test

import (
	"fmt"
	"time"

	"github.com/lockmarket/lockmarket/internal/report/latency"
)

func ExampleMilliseconds() {
	fmt.Println(latency.Milliseconds(1500 * time.Microsecond))
	fmt.Println(latency.Milliseconds(2*time.Second + 1234567*time.Nanosecond))
	fmt.Println(latency.Milliseconds(400 * time.Nanosecond))
	// Output:
	// 1.5
	// 2001.235
	// 0
}

func ExampleSeconds() {
	fmt.Println(latency.Seconds(90 * time.Second))
	fmt.Println(latency.Seconds(1234567890 * time.Nanosecond))
	fmt.Println(latency.Seconds(499 * time.Microsecond))
	// Output:
	// 90
	// 1.235
	// 0
}
