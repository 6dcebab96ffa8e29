package lockbench

import (
	"math/bits"
	"time"
)

// histogram records durations in log-linear buckets (32 per power of
// two, so a quantile is within about 3% of the true value) without
// allocating, so recording does not disturb allocations per operation.
// It is not safe for concurrent use: each goroutine keeps its own and
// they are merged afterwards.
type histogram struct {
	counts [64 * subBuckets]int64
	n      int64
}

const subBits = 5
const subBuckets = 1 << subBits

func bucketOf(d time.Duration) int {
	v := uint64(d)
	if v < subBuckets {
		return int(v)
	}
	exp := bits.Len64(v) - 1 - subBits // >= 0
	sub := int(v>>uint(exp)) - subBuckets
	return (exp+1)*subBuckets + sub
}

// lowerBound is the smallest duration in bucket i.
func lowerBound(i int) time.Duration {
	if i < subBuckets {
		return time.Duration(i)
	}
	exp := i/subBuckets - 1
	sub := i % subBuckets
	return time.Duration(uint64(subBuckets+sub) << uint(exp))
}

func (h *histogram) record(d time.Duration) {
	if d < 0 {
		d = 0
	}
	h.counts[bucketOf(d)]++
	h.n++
}

func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
}

// quantile returns the q-quantile (0 < q <= 1) as the midpoint of its
// bucket, or 0 when nothing was recorded.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int64(q*float64(h.n) + 0.5)
	if rank < 1 {
		rank = 1
	}
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo := lowerBound(i)
			hi := lowerBound(i + 1)
			return lo + (hi-lo)/2
		}
	}
	return lowerBound(len(h.counts) - 1)
}
