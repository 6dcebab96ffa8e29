// Package latency records how long operations take, in a histogram of
// constant memory with exact count, mean and extremes, and gives a
// duration in the one form outputs use (Milliseconds).
package latency

import (
	"math"
	"math/bits"
	"time"
)

// subBits sets the histogram's precision: 2^subBits buckets per power of
// two, so a bucket is never wider than 1/128 of its lower bound (0.8 %).
const subBits = 7

const (
	subCount   = 1 << subBits
	numBuckets = (64 - subBits + 1) * subCount
)

// Histogram records durations in log-linear buckets (in the manner of an
// HDR histogram): constant memory, whatever the number of samples, with a
// relative error below 0.8 % on quantiles. Count, sum, min and max are
// exact. The zero value is empty and ready to use; it is not safe for
// concurrent use (give each worker its own and Merge them).
type Histogram struct {
	counts   [numBuckets]uint64
	n        uint64
	sum      float64 // nanoseconds; float so that it cannot overflow
	min, max time.Duration
}

// bucketOf maps a non-negative value in nanoseconds to its bucket.
func bucketOf(v uint64) int {
	if v < subCount {
		return int(v)
	}
	shift := bits.Len64(v) - subBits - 1
	return (shift+1)*subCount + int(v>>uint(shift)) - subCount
}

// bucketBounds returns the lowest value of bucket i and its width.
func bucketBounds(i int) (low, width uint64) {
	if i < subCount {
		return uint64(i), 1
	}
	shift := uint(i/subCount - 1)
	m := uint64(i%subCount + subCount)
	return m << shift, 1 << shift
}

// Record adds one duration; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(uint64(d))]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	if d > h.max {
		h.max = d
	}
	h.n++
	h.sum += float64(d)
}

// Merge adds every sample of o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	if o.max > h.max {
		h.max = o.max
	}
	h.n += o.n
	h.sum += o.sum
}

// Count is the number of samples.
func (h *Histogram) Count() uint64 { return h.n }

// Mean is the exact mean, or 0 with no samples.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return time.Duration(math.Round(h.sum / float64(h.n)))
}

// Min and Max are the exact extremes, 0 with no samples.
func (h *Histogram) Min() time.Duration { return h.min }

// Max is the largest sample, 0 with no samples.
func (h *Histogram) Max() time.Duration { return h.max }

// Quantile returns the q-quantile (0 < q <= 1) by the nearest-rank method,
// as the middle of the bucket that holds it, kept within [Min, Max]. It is
// 0 with no samples.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(1, min(rank, h.n))
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			low, width := bucketBounds(i)
			v := time.Duration(low + width/2)
			return min(max(v, h.min), h.max)
		}
	}
	return h.max
}
