package latency

import (
	"math"
	"time"
)

// Milliseconds is d in milliseconds, rounded to the microsecond: the one
// form in which the reports and the HTTP answers give a duration (keys
// ending in _ms).
func Milliseconds(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Millisecond)*1000) / 1000
}

// Seconds is d in seconds, rounded to the millisecond: the form of a
// duration under a key ending in _s.
func Seconds(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Millisecond)) / 1000
}
