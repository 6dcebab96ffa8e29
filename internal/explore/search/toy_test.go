package search_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"

	"github.com/lockmarket/lockmarket/internal/explore/search"
)

// The toy system: threads that run little programs over shared integer
// variables, one instruction per choice, in the interleaving the search
// picks. A thread may also crash (a fault), when the toy allows faults.

// op is an instruction.
type op struct {
	kind string // "load", "inc", "enter", "leave"
	v    int    // the variable
}

// load reads v into the thread's register; inc writes the register plus
// one to v; enter takes the lock v if the register read it free (0), and
// counts the thread inside; leave frees it.
func load(v int) op  { return op{"load", v} }
func inc(v int) op   { return op{"inc", v} }
func enter(v int) op { return op{"enter", v} }
func leave(v int) op { return op{"leave", v} }

func (o op) writes() bool { return o.kind != "load" }

// move is a choice of the toy: a thread's next instruction, or its
// crash.
type move struct {
	Thread int
	Crash  bool
}

func (m move) String() string {
	if m.Crash {
		return fmt.Sprintf("T%d crashes", m.Thread)
	}
	return fmt.Sprintf("T%d", m.Thread)
}

// choice is an enabled move with the instruction it runs.
type choice struct {
	move
	op op
}

// toy is a system of threads. Its properties: "lost" (a counter, the
// variable counter, is less than the incs that wrote it) and "mutex" (two
// threads inside at once).
type toy struct {
	progs   [][]op
	vars    int
	counter int // the variable whose incs are counted; -1: none
	faults  int // the most crashes in a run
	// voidEvery makes every voidEvery-th run void (0: none).
	voidEvery int
	runs      int
	// diverge makes the toy's runs differ from one run to the next: the
	// thread set changes with the run's number.
	diverge bool
	// symmetric makes the state fingerprint the least over the orders of
	// the threads (whose programs must then be alike), with Rename.
	symmetric bool
}

// end is a run's final state: the variables, and all of it (the
// threads' registers, where each stopped, which crashed).
type end struct{ vars, all string }

func (t *toy) Run(ctx context.Context, choose search.Chooser[choice]) (search.Outcome, error) {
	t.runs++
	vars := make([]int, t.vars)
	pc := make([]int, len(t.progs))
	reg := make([]int, len(t.progs))
	crashed := make([]bool, len(t.progs))
	inside, faults, incs, taken := 0, 0, 0, 0
	var out search.Outcome
	for depth := 0; ; depth++ {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		var en []choice
		for i, p := range t.progs {
			if t.diverge && t.runs%2 == 0 && i == 0 {
				continue
			}
			if !crashed[i] && pc[i] < len(p) {
				en = append(en, choice{move{Thread: i}, p[pc[i]]})
			}
		}
		if faults < t.faults {
			for i, p := range t.progs {
				if !crashed[i] && pc[i] < len(p) {
					en = append(en, choice{move: move{Thread: i, Crash: true}})
				}
			}
		}
		if len(en) == 0 {
			out.Complete = true
			break
		}
		state := func() (search.Fingerprint, bool) {
			return sha256.Sum256(
				fmt.Appendf(
					nil,
					"%d %v %v %v %v %d %d",
					depth,
					vars,
					pc,
					reg,
					crashed,
					inside,
					faults,
				),
			), true
		}
		d := search.Decision[choice]{Depth: depth, Enabled: en, State: state}
		if t.symmetric {
			var to []int // thread i is thread to[i] in the state named
			d.State = func() (search.Fingerprint, bool) {
				var best search.Fingerprint
				for n, perm := range orders(len(t.progs)) {
					p, r, c := make(
						[]int,
						len(pc),
					), make(
						[]int,
						len(reg),
					), make(
						[]bool,
						len(crashed),
					)
					for i, j := range perm {
						p[j], r[j], c[j] = pc[i], reg[i], crashed[i]
					}
					fp := sha256.Sum256(
						fmt.Appendf(
							nil,
							"%d %v %v %v %v %d %d",
							depth,
							vars,
							p,
							r,
							c,
							inside,
							faults,
						),
					)
					if n == 0 || string(fp[:]) < string(best[:]) {
						best, to = fp, perm
					}
				}
				return best, true
			}
			d.Rename = func(c choice) choice {
				c.Thread = to[c.Thread]
				return c
			}
		}
		i, ok := choose(d)
		if !ok {
			break
		}
		c := en[i]
		taken++
		if c.Crash {
			crashed[c.Thread] = true
			faults++
			continue
		}
		th := c.Thread
		switch c.op.kind {
		case "load":
			reg[th] = vars[c.op.v]
		case "inc":
			vars[c.op.v] = reg[th] + 1
			if c.op.v == t.counter {
				incs++
			}
		case "enter":
			if reg[th] == 0 {
				vars[c.op.v] = 1
				inside++
				if inside == 2 {
					out.Violations = append(out.Violations, search.Violation{Property: "mutex",
						Message: "two threads inside", Step: depth})
				}
			} else {
				pc[th] = len(t.progs[th]) // gives up
				continue
			}
		case "leave":
			vars[c.op.v] = 0
			inside--
		}
		pc[th]++
	}
	if t.voidEvery > 0 && t.runs%t.voidEvery == 0 {
		return out, fmt.Errorf("toy: void run %d: %w", t.runs, search.ErrRetry)
	}
	if out.Complete && t.counter >= 0 && vars[t.counter] < incs {
		out.Violations = append(out.Violations, search.Violation{Property: "lost",
			Message: fmt.Sprintf("%d incs, counter %d", incs, vars[t.counter]), Step: taken - 1})
	}
	out.Data = end{fmt.Sprint(vars), fmt.Sprint(vars, reg, pc, crashed, inside)}
	return out, nil
}

func (t *toy) Key(c choice) move { return c.move }

func (t *toy) Independent(a, b choice) bool {
	if a.Thread == b.Thread {
		return false
	}
	if a.Crash || b.Crash {
		return true // a crash touches no variable
	}
	return a.op.v != b.op.v || !a.op.writes() && !b.op.writes()
}

func (t *toy) Fault(c choice) bool { return c.Crash }

func (t *toy) Owner(c choice) string { return fmt.Sprintf("T%d", c.Thread) }

// clone is a toy alike, for another worker.
func (t *toy) clone() *toy {
	c := *t
	c.runs = 0
	return &c
}

// steps is a program of n loads of variable v.
func steps(n, v int) []op {
	var p []op
	for range n {
		p = append(p, load(v))
	}
	return p
}

func systems(t *toy, n int) []search.System[choice, move] {
	out := []search.System[choice, move]{t}
	for range n - 1 {
		out = append(out, t.clone())
	}
	return out
}

// orders lists every order of 0..n-1.
func orders(n int) [][]int {
	if n == 0 {
		return [][]int{{}}
	}
	var out [][]int
	for _, p := range orders(n - 1) {
		for i := range n {
			q := slices.Insert(slices.Clone(p), i, n-1)
			out = append(out, q)
		}
	}
	return out
}

// runNotingPath runs the toy as Run does and returns the moves it chose,
// in order: the path of the run, for the recorders that note it.
func (t *toy) runNotingPath(
	ctx context.Context,
	choose search.Chooser[choice],
) (search.Outcome, []move, error) {
	var path []move
	out, err := t.Run(ctx, func(d search.Decision[choice]) (int, bool) {
		i, ok := choose(d)
		if ok {
			path = append(path, d.Enabled[i].move)
		}
		return i, ok
	})
	return out, path, err
}
