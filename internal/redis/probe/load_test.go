package probe

import (
	"os"
	"testing"
)

func TestStealShare(t *testing.T) {
	tests := []struct {
		name   string
		a, b   Load
		want   float64
		wantOK bool
	}{
		{"since boot", Load{}, Load{Steal: 5, Total: 100, HasSteal: true, OK: true}, 0.05, true},
		{"during a run", Load{Steal: 5, Total: 100, HasSteal: true, OK: true},
			Load{Steal: 7, Total: 140, HasSteal: true, OK: true}, 0.05, true},
		{"no time passed", Load{Steal: 5, Total: 100, HasSteal: true, OK: true},
			Load{Steal: 5, Total: 100, HasSteal: true, OK: true}, 0, false},
		{"not counted at the end", Load{}, Load{OK: true}, 0, false},
		{"not counted at the start", Load{OK: true}, Load{Steal: 1, Total: 10, HasSteal: true, OK: true}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := StealShare(tt.a, tt.b)
			if ok != tt.wantOK || (ok && (got < tt.want-1e-9 || got > tt.want+1e-9)) {
				t.Errorf("StealShare = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

// TestReadLoad reads this machine's load and memory where /proc has them.
func TestReadLoad(t *testing.T) {
	if _, err := os.Stat("/proc/loadavg"); err != nil {
		t.Skip("no /proc/loadavg on this system")
	}
	l := ReadLoad()
	if !l.OK || l.Avg1 < 0 || l.CPUs < 1 || !l.HasSteal || l.Total <= 0 || l.Steal < 0 || l.Steal > l.Total {
		t.Errorf("ReadLoad = %+v", l)
	}
	if later := ReadLoad(); later.Total < l.Total {
		t.Errorf("CPU time went back: %v then %v", l.Total, later.Total)
	}
	if b, ok := AvailableMemory(); !ok || b <= 0 {
		t.Errorf("AvailableMemory = %d, %v", b, ok)
	}
}
