package probe

import (
	"runtime"

	"github.com/prometheus/procfs"
)

// Load is how busy the machine was at one moment, as /proc reports it:
// the load averages and the CPU time counters of every CPU. OK is false
// where /proc is missing (a system other than Linux); Steal is known only
// where the kernel counts it (HasSteal).
type Load struct {
	// Avg1, Avg5 and Avg15 are the load averages over 1, 5 and 15
	// minutes: runnable and waiting tasks, not a share of the CPUs.
	Avg1, Avg5, Avg15 float64
	// CPUs is how many CPUs this process may use.
	CPUs int
	// Steal and Total are the CPU seconds, summed over every CPU since
	// boot, that the hypervisor gave to other guests (steal) and that
	// passed in all (every state counted once).
	Steal, Total float64
	HasSteal     bool
	OK           bool
}

// ReadLoad reads the machine's load now.
func ReadLoad() Load {
	l := Load{CPUs: runtime.NumCPU()}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return l
	}
	avg, err := fs.LoadAvg()
	if err != nil {
		return l
	}
	l.Avg1, l.Avg5, l.Avg15, l.OK = avg.Load1, avg.Load5, avg.Load15, true
	if st, err := fs.Stat(); err == nil {
		c := st.CPUTotal
		// Guest time is counted in user time already.
		l.Total = c.User + c.Nice + c.System + c.Idle + c.Iowait + c.IRQ + c.SoftIRQ + c.Steal
		l.Steal, l.HasSteal = c.Steal, l.Total > 0
	}
	return l
}

// StealShare is the share of the CPU time from a to b that was stolen
// (0..1); ok is false unless both readings count it and time passed.
// With a the zero Load, it is the share since boot.
func StealShare(a, b Load) (share float64, ok bool) {
	if !b.HasSteal || (a.OK && !a.HasSteal) {
		return 0, false
	}
	total := b.Total - a.Total
	if total <= 0 {
		return 0, false
	}
	return (b.Steal - a.Steal) / total, true
}

// AvailableMemory is the memory the machine can give new work without
// swapping (MemAvailable in /proc/meminfo), in bytes; ok is false where
// the OS does not say.
func AvailableMemory() (bytes int64, ok bool) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, false
	}
	mi, err := fs.Meminfo()
	if err != nil || mi.MemAvailableBytes == nil {
		return 0, false
	}
	return int64(*mi.MemAvailableBytes), true
}
