package latency

import (
	"testing"
	"time"
)

func TestHistogram(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		var h Histogram
		if h.Count() != 0 || h.Mean() != 0 || h.Quantile(0.5) != 0 || h.Max() != 0 {
			t.Fatalf("empty histogram not zero: %d %v %v", h.Count(), h.Mean(), h.Quantile(0.5))
		}
	})
	t.Run("uniform", func(t *testing.T) {
		var a, b Histogram
		// 1..10000 µs, split over two histograms and merged.
		for i := 1; i <= 10000; i++ {
			d := time.Duration(i) * time.Microsecond
			if i%2 == 0 {
				a.Record(d)
			} else {
				b.Record(d)
			}
		}
		a.Merge(&b)
		if a.Count() != 10000 {
			t.Fatalf("count %d", a.Count())
		}
		if want := 5000500 * time.Nanosecond; a.Mean() != want {
			t.Errorf("mean %v, want %v", a.Mean(), want)
		}
		if a.Min() != time.Microsecond || a.Max() != 10*time.Millisecond {
			t.Errorf("min %v max %v", a.Min(), a.Max())
		}
		for _, tc := range []struct {
			q    float64
			want time.Duration
		}{{0.5, 5 * time.Millisecond}, {0.99, 9900 * time.Microsecond}, {1, 10 * time.Millisecond}} {
			got := a.Quantile(tc.q)
			if rel := float64(got-tc.want) / float64(tc.want); rel > 0.008 || rel < -0.008 {
				t.Errorf("q%.2f = %v, want %v within 0.8%%", tc.q, got, tc.want)
			}
		}
	})
	t.Run("buckets cover values exactly once", func(t *testing.T) {
		for _, v := range []uint64{0, 1, 127, 128, 129, 255, 256, 1000, 1 << 20, 1<<40 + 12345, 1<<63 - 1} {
			i := bucketOf(v)
			low, width := bucketBounds(i)
			if v < low || v-low >= width || i >= numBuckets {
				t.Errorf("value %d in bucket %d [%d, +%d)", v, i, low, width)
			}
		}
	})
}

func TestHistogramQuantile(t *testing.T) {
	tests := []struct {
		name   string
		values []time.Duration
		q      float64
		want   time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"small exact", []time.Duration{3, 5, 7}, 0.5, 5},
		{"p99 of 1..1000us", seq(1000, time.Microsecond), 0.99, 990 * time.Microsecond},
		{"p50 of 1..1000us", seq(1000, time.Microsecond), 0.50, 500 * time.Microsecond},
		{"one second", []time.Duration{time.Second}, 0.99, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var h Histogram
			for _, v := range tt.values {
				h.Record(v)
			}
			got := h.Quantile(tt.q)
			// Buckets are 1/128 of a power of two wide: within 0.8%.
			if diff := got - tt.want; diff < -tt.want/125 || diff > tt.want/125 {
				t.Fatalf("quantile(%v) = %v, want %v within 0.8%%", tt.q, got, tt.want)
			}
		})
	}
}

func seq(n int, unit time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * unit
	}
	return out
}
