package goroutine

import (
	"bytes"
	"reflect"
	"runtime"
	"strconv"
	"strings"
)

// State is one goroutine of a stack dump.
type State struct {
	ID     uint64
	Status string   // "sleep", "select", "chan receive", "running", ...
	Funcs  []string // the functions of its frames, innermost first
	// parent is the goroutine that created it (0: none named), and
	// bubble is set for one in a testing/synctest bubble.
	Parent  uint64
	Bubble  string // the id of its testing/synctest bubble, "" for none
	Durable bool   // blocked where only its bubble can wake it
}

// Dump is every goroutine's state and frames.
func Dump() map[uint64]State {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return Parse(buf)
}

// Parse reads a dump of every goroutine (runtime.Stack's).
func Parse(buf []byte) map[uint64]State {
	out := map[uint64]State{}
	for _, block := range bytes.Split(buf, []byte("\n\n")) {
		lines := strings.Split(string(block), "\n")
		head, ok := strings.CutPrefix(lines[0], "goroutine ")
		if !ok {
			continue
		}
		idText, rest, _ := strings.Cut(head, " [")
		id, err := strconv.ParseUint(idText, 10, 64)
		if err != nil {
			continue
		}
		rest = strings.TrimSuffix(rest, "]:")
		state, _, _ := strings.Cut(rest, ",")
		g := State{ID: id}
		if _, b, ok := strings.Cut(rest, "synctest bubble "); ok {
			g.Bubble, _, _ = strings.Cut(b, ",")
		}
		g.Status, g.Durable = strings.CutSuffix(state, " (durable)")
		for _, l := range lines[1:] {
			if l == "" || strings.HasPrefix(l, "\t") {
				continue
			}
			if strings.HasPrefix(l, "created by ") {
				g.Parent = CreatorIn([]byte(l))
				continue
			}
			if i := strings.LastIndexByte(l, '('); i > 0 {
				l = l[:i]
			}
			g.Funcs = append(g.Funcs, l)
		}
		out[id] = g
	}
	return out
}

// FuncName is the name of function f as a goroutine's stack shows it.
func FuncName(f any) string {
	return runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
}

// blockedStates are the states of a goroutine that waits for something
// other than the processor, the network or a system call.
var blockedStates = []string{"sleep", "select", "select (no cases)", "chan receive", "chan send",
	"chan receive (nil chan)", "chan send (nil " +
		"chan)", "sync.Cond.Wait", "sync.Mutex.Lock", "sync.RWMutex.Lock",
	"sync.RWMutex.RLock", "sync.WaitGroup.Wait", "semacquire"}

// Calls reports whether one of g's frames is in one of the functions fs
// (as FuncName names them).
func (g State) Calls(fs []string) bool {
	for _, f := range g.Funcs {
		if containsString(fs, f) {
			return true
		}
	}
	return false
}

// Kind says what g is doing: "sleep" (in time.Sleep), "blocked" (on a
// channel, a select, a lock) or "active" (running, runnable, on the
// network, in a system call, or waiting for the runtime's own work: see
// runtimeAtWork).
func (g State) Kind() string {
	switch {
	case g.runtimeAtWork():
		return "active"
	case g.Status == "sleep":
		return "sleep"
	case containsString(blockedStates, g.Status):
		return "blocked"
	}
	return "active"
}

// runtimeAtWork reports whether g waits on a semaphore of the runtime's
// own, taken by the runtime and not by a lock of the program's: an
// allocation waiting for a garbage collection to start, or for the world
// to be stopped. That wait ends when the runtime's work does, which takes
// as long as the machine gives it; it is never a wait on the wall clock.
// On a starved machine a client's allocation sat there for a second, and
// was taken for one (ErrWallClock).
func (g State) runtimeAtWork() bool {
	if g.Status != "semacquire" {
		return false
	}
	for _, f := range g.Funcs {
		if strings.HasPrefix(f, "runtime.gopark") || strings.HasPrefix(f, "runtime.semacquire") {
			continue // the wait itself
		}
		// Its caller: the runtime's own (runtime.gcStart,
		// runtime.stopTheWorld...), or a lock's (sync.Mutex's,
		// sync.WaitGroup's...).
		return strings.HasPrefix(f, "runtime.")
	}
	return false
}

func containsString(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// Where names the wait or the work of g: its state, and the innermost
// function of its frames that is neither the runtime's, nor the
// standard library's waits, nor go-redis's.
func (g State) Where() string {
	what := g.Status
	switch g.Status {
	case "sleep":
		what = "time.Sleep"
	case "select":
		what = "a select (a timer, a channel)"
	case "chan receive":
		what = "a channel receive (a timer, a channel)"
	}
	for _, f := range g.Funcs {
		if strings.HasPrefix(f, "runtime.") || strings.HasPrefix(f, "time.") ||
			strings.HasPrefix(f, "sync.") ||
			strings.HasPrefix(f, "internal/") ||
			strings.HasPrefix(f, "context.") ||
			strings.HasPrefix(f, "github.com/redis/go-redis/") {
			continue
		}
		return what + " in " + f
	}
	return what
}

// Waiting reports whether g waits for another goroutine to send, close
// or signal: on a channel, a select, a WaitGroup or a Cond, not on a
// lock (held for a moment) nor in time.Sleep.
func (g State) Waiting() bool {
	switch g.Status {
	case "chan receive", "chan send", "select", "sync.WaitGroup.Wait", "sync.Cond.Wait":
		return g.Kind() == "blocked"
	}
	return false
}

// OnCPU reports whether g is on the processor, waits for it, or is in a
// system call or on the network: at work, whatever its frames say.
func (g State) OnCPU() bool {
	switch g.Status {
	case "running", "runnable", "syscall", "IO wait", "preempted":
		return true
	}
	return false
}
