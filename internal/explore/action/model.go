package action

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Model is the bounds of an exploration: what may happen in a schedule.
type Model struct {
	// Clients is how many clients run the workload (2 to 4; 0 for the
	// target's default).
	Clients int `json:"clients"`
	// Iterations is how many critical sections each client goes through.
	Iterations int `json:"iterations"`
	// Attempts is how many times a client tries to take the lock in one
	// iteration before it gives up; 0 for the default (Resolve).
	Attempts int `json:"attempts"`
	// Faults is the most faults in one schedule.
	Faults int `json:"faults"`
	// FaultKinds is which faults may happen.
	FaultKinds []Fault `json:"fault_kinds"`
	// TTL is the lease (of every client, unless TTLs says otherwise);
	// pauses are measured against it.
	TTL time.Duration `json:"-"`
	// TTLs, when set, is a lease per client, in order: client i's is
	// TTLs[i], and clients past the list take its last.
	TTLs []time.Duration `json:"-"`
	// RenewEvery, when set, makes each holder extend its hold every
	// RenewEvery of virtual time while it holds it, as a watchdog does
	// (instead of once in the critical section): a target with an
	// extension (a Lua or manifest recipe with extend, locking.Mutex).
	RenewEvery time.Duration `json:"-"`
	// Retry is a client's wait between attempts, in virtual time.
	Retry time.Duration `json:"-"`
	// Steps is the most commands one client may send in a schedule;
	// past it, the client stops where it is (as if paused for good).
	Steps int `json:"steps"`
	// Ticks is the most times the clock advances in one schedule (a
	// retry's wait, a pause's end, a watchdog's interval each take one).
	Ticks int `json:"ticks"`
	// MaxSteps cuts a schedule (a safety net; never reached by the
	// workloads' bounds).
	MaxSteps int `json:"max_steps"`
	// Jump is how far a node's clock jumps forward (FaultClockJump); 0
	// for the default, one lease (Resolve).
	Jump time.Duration `json:"-"`
	// MaxDelay, when set, bounds the network's delay in virtual time: a
	// command sent (parked by a client that is neither paused nor
	// crashed) runs before the clock passes MaxDelay after its sending,
	// as on a network whose delays are bounded. A pause before a command
	// is sent is a pause, not a delay: the bound counts from the pause's
	// end. 0, the default, bounds nothing: a command may land any time
	// later, as on an asynchronous network, where only fencing keeps a
	// write in flight from landing after the lease that allowed it.
	MaxDelay time.Duration `json:"-"`
}

// DefaultModel is the model of a target unless told otherwise: the target's
// number of clients (Target.Clients), one critical section each, two attempts
// (one with three clients or more: a client's first attempt can already come
// after any other step), at most one fault of any kind, a 10 s lease and a 10
// ms retry.
func DefaultModel() Model {
	return Model{Iterations: 1, Attempts: 0, Faults: 1, Ticks: 3, Steps: 10,
		FaultKinds: []Fault{FaultPauseShort, FaultPauseLong, FaultPauseForever, FaultCrash},
		TTL:        10 * time.Second, Retry: 10 * time.Millisecond, MaxSteps: 200}
}

// Resolve returns m with its defaults filled in.
func (m Model) Resolve() Model {
	m.Attempts = m.Tries()
	if m.Jump == 0 {
		m.Jump = m.TTL
	}
	return m
}

// For returns m as it runs a target whose default number of clients is
// clients (Target.Clients): checked (Validate) and with every default
// filled in (Resolve), the number of clients first, when m leaves it 0:
// the target's, and at least 2. It is the one place where a model meets
// its target's defaults.
func (m Model) For(clients int) (Model, error) {
	if m.Clients == 0 {
		m.Clients = max(clients, 2)
	}
	if err := m.Validate(); err != nil {
		return Model{}, err
	}
	return m.Resolve(), nil
}

// attempts is Attempts, or its default for the number of clients.
func (m Model) Tries() int {
	if m.Attempts > 0 {
		return m.Attempts
	}
	if m.Clients >= 3 {
		return 1
	}
	return 2
}

// MaxTTL is the longest lease (and clock jump) a model may have: a
// schedule's virtual time, times Dilation, must fit a time.Duration.
const MaxTTL = 10 * time.Minute

// Validate checks the bounds.
func (m Model) Validate() error {
	switch {
	case m.Clients < 2 || m.Clients > 4:
		return fmt.Errorf("clients %d: must be 2 to 4", m.Clients)
	case m.Iterations < 1 || m.Iterations > 3:
		return fmt.Errorf("iterations %d: must be 1 to 3", m.Iterations)
	case m.Attempts < 0 || m.Attempts > 5:
		return fmt.Errorf("attempts %d: must be 1 to 5", m.Attempts)
	case m.Steps < 1 || m.Steps > 50:
		return fmt.Errorf("steps %d: must be 1 to 50", m.Steps)
	case m.Ticks < 0 || m.Ticks > 10:
		return fmt.Errorf("ticks %d: must be 0 to 10", m.Ticks)
	case m.Faults < 0 || m.Faults > 3:
		return fmt.Errorf("faults per schedule %d: must be 0 to 3", m.Faults)
	case m.TTL < time.Second:
		return fmt.Errorf(
			"ttl %v: must be at least 1s (the real time a schedule takes must be negligible "+
				"beside it)",
			m.TTL,
		)
	case m.TTL > MaxTTL:
		return fmt.Errorf(
			"ttl %v: must be at most %v (times Dilation, a schedule's time must fit a "+
				"time.Duration)",
			m.TTL,
			MaxTTL,
		)
	case m.TTL%time.Millisecond != 0:
		return fmt.Errorf("ttl %v: must be whole milliseconds", m.TTL)
	case m.Jump < 0 || m.Jump > MaxTTL || m.Jump%time.Millisecond != 0:
		return fmt.Errorf("clock jump %v: must be whole milliseconds, 0 to %v", m.Jump, MaxTTL)
	case len(m.TTLs) > 4:
		return fmt.Errorf("ttls: %d leases for at most 4 clients", len(m.TTLs))
	case m.RenewEvery < 0 || m.RenewEvery > MaxTTL || m.RenewEvery%time.Millisecond != 0:
		return fmt.Errorf(
			"renew every %v: must be whole milliseconds, 0 to %v", m.RenewEvery, MaxTTL,
		)
	}
	if err := CheckDelay(m.MaxDelay); err != nil {
		return fmt.Errorf("max delay %v: %w", m.MaxDelay, err)
	}
	for _, d := range m.TTLs {
		if d < time.Second || d > MaxTTL || d%time.Millisecond != 0 {
			return fmt.Errorf("ttls: lease %v: must be 1s to %v, in whole milliseconds", d, MaxTTL)
		}
	}
	return nil
}

// CheckDelay checks d as a bound on the network's delay (Model.MaxDelay):
// 0, for none, or whole milliseconds from 1ms to MaxTTL.
func CheckDelay(d time.Duration) error {
	if d == 0 {
		return nil
	}
	if d < time.Millisecond || d > MaxTTL || d%time.Millisecond != 0 {
		return fmt.Errorf("want whole milliseconds, 1ms to %v (0: unbounded)", MaxTTL)
	}
	return nil
}

// LeaseOf is client i's lease.
func (m Model) LeaseOf(i int) time.Duration {
	if len(m.TTLs) == 0 {
		return m.TTL
	}
	return m.TTLs[min(i, len(m.TTLs)-1)]
}

// PauseLength is how long a pause of that length lasts under m, -1 for
// good; ok is false for no pause of the list.
func (m Model) PauseLength(length string) (d time.Duration, ok bool) {
	switch length {
	case Short:
		return m.TTL / 2, true
	case Long:
		return m.TTL * 3 / 2, true
	case Forever:
		return -1, true
	}
	return 0, false
}

// ModelJSON is Model's JSON.
type ModelJSON struct {
	Clients    int     `json:"clients"`
	Nodes      int     `json:"nodes,omitempty"`
	Iterations int     `json:"iterations"`
	Attempts   int     `json:"attempts"`
	Faults     int     `json:"faults_per_schedule"`
	Ticks      int     `json:"ticks_per_schedule"`
	Steps      int     `json:"steps_per_client"`
	FaultKinds []Fault `json:"faults"`
	JumpMS     int64   `json:"clock_jump_ms,omitempty"`
	TTLMS      int64   `json:"ttl_ms"`
	TTLsMS     []int64 `json:"ttls_ms,omitempty"`
	RenewMS    int64   `json:"renew_every_ms,omitempty"`
	RetryMS    int64   `json:"retry_ms"`
	MaxDelayMS int64   `json:"max_delay_ms,omitempty"`
	ShortMS    int64   `json:"pause_short_ms"`
	LongMS     int64   `json:"pause_long_ms"`
}

// JSON is the model as its JSON writes it (ModelJSON).
func (m Model) JSON() ModelJSON {
	j := ModelJSON{
		Clients:    m.Clients,
		Iterations: m.Iterations,
		Attempts:   m.Attempts,
		Faults:     m.Faults,
		Ticks:      m.Ticks,
		Steps:      m.Steps,
		FaultKinds: slices.Clip(append([]Fault{}, m.FaultKinds...)),
		TTLMS:      m.TTL.Milliseconds(),
		RenewMS:    m.RenewEvery.Milliseconds(),
		RetryMS:    m.Retry.Milliseconds(),
		MaxDelayMS: m.MaxDelay.Milliseconds(),
	}
	if d, ok := m.PauseLength(Short); ok {
		j.ShortMS = d.Milliseconds()
	}
	if d, ok := m.PauseLength(Long); ok {
		j.LongMS = d.Milliseconds()
	}
	if slices.Contains(m.FaultKinds, FaultClockJump) {
		j.JumpMS = m.Jump.Milliseconds()
	}
	for _, d := range m.TTLs {
		j.TTLsMS = append(j.TTLsMS, d.Milliseconds())
	}
	return j
}

// MarshalJSON writes the model with snake_case keys and its durations
// in milliseconds (ttl_ms, retry_ms, pause_short_ms...).
func (m Model) MarshalJSON() ([]byte, error) { return json.Marshal(m.JSON()) }

// ErrBoundForm is returned by ParseBounds for a list that is not of the
// form NAME=N,NAME=N.
var ErrBoundForm = errors.New(
	"explore: bounds want the form iterations=N,attempts=N,faults=N,ticks=N,steps=N",
)

// ParseBounds sets the bounds of m that s names: a comma-separated list
// of NAME=N, where NAME is iterations, attempts, faults, ticks or steps
// (the fields of Model of those names). An empty s sets none. The values
// are not checked here (Model.Validate does).
func ParseBounds(s string, m *Model) error {
	if s == "" {
		return nil
	}
	bounds := map[string]*int{"iterations": &m.Iterations, "attempts": &m.Attempts,
		"faults": &m.Faults, "ticks": &m.Ticks, "steps": &m.Steps}
	for kv := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		n, err := strconv.Atoi(v)
		if !ok || err != nil {
			return ErrBoundForm
		}
		field, known := bounds[k]
		if !known {
			return fmt.Errorf(
				"unknown bound %q (want iterations, attempts, faults, ticks, steps)",
				k,
			)
		}
		*field = n
	}
	return nil
}

// ParseLeases reads a comma-separated list of leases, one per client in
// order (Model.TTLs), such as "10s,3s".
func ParseLeases(s string) ([]time.Duration, error) {
	var out []time.Duration
	for d := range strings.SplitSeq(s, ",") {
		v, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil {
			return nil, fmt.Errorf("lease %q: %w", d, err)
		}
		out = append(out, v)
	}
	return out, nil
}
