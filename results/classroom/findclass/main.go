// Command findclass measures the explorer's shared searches under a
// class: it starts a market binary with -sessions-per-address 60 and an
// admin token, opens N explorer sessions of recipe 6's fix from one
// address without the token, and has them all ask "find a bug" from the
// start at once, each then reading its session every 400 ms as the page
// does, until every one has its answer. Then each takes a step of its own
// (the enabled actions in turn) and all ask again, from step 1: as many
// searches as there were first actions, shared by the sessions that took
// the same one; then all ask again from step 0, whose answer is kept.
// Each session is also read every 15 s, as the page does.
// Throughout, GET /api/market is polled every 100 ms and N
// pages read GET /api/users every 3 s, as the page does; every answer's
// status is counted. Then the sessions are left unread (a killed
// browser's) and the time until the service holds none is measured; then
// the address's bound of 60 is met. See ../README.md.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

const token = "the-teachers-own"

// find is what a session's state says of its search.
type find struct {
	State         string  `json:"state"`
	Waiting       bool    `json:"waiting"`
	QueuePosition int     `json:"queue_position"`
	WaitEstimate  int64   `json:"wait_estimate_ms"`
	Following     int     `json:"following"`
	Kept          bool    `json:"kept"`
	Schedules     int     `json:"schedules"`
	ElapsedMS     float64 `json:"elapsed_ms"`
	BudgetMS      int64   `json:"budget_ms"`
	Note          string  `json:"note"`
	Error         string  `json:"error"`
	Result        *struct {
		Exhaustive bool `json:"exhaustive"`
	} `json:"result"`
}

type state struct {
	Enabled []json.RawMessage `json:"enabled"`
	Find    *find             `json:"find"`
}

var client = &http.Client{Timeout: 60 * time.Second}

func call(method, url, body string) (int, []byte, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

// answer is one session's search as it ended.
type answer struct {
	fin        find
	took       time.Duration
	maxQueue   int
	maxFollows int
}

func main() {
	bin := flag.String("market", "", "market binary")
	n := flag.Int("n", 40, "students")
	port := flag.Int("port", 18490, "the market's port")
	flag.Parse()
	if *bin == "" {
		fmt.Fprintln(os.Stderr, "usage: findclass -market PATH [-n 40] [-port 18490]")
		os.Exit(2)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", *port)
	cmd, logName := startMarket(*bin, *port, base)
	defer os.Remove(logName)
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()

	room := readRoom(base, *n)
	ids, starts := openSessions(base, *n)
	keepEnd := keepReading(base, ids)

	round(base, ids, fmt.Sprintf("%d sessions ask \"find a bug\" at once from step 0", *n), `{"from_step":0}`)
	// Each takes a first step of its own, the enabled actions in turn.
	first := starts[0].Enabled
	for i, id := range ids {
		code, body, err := call("POST", base+"/api/explore/sessions/"+id+"/steps", string(first[i%len(first)]))
		must(err)
		if code != 200 {
			fmt.Fprintf(os.Stderr, "step of session %d: %d %s\n", i, code, body)
			die()
		}
	}
	round(base, ids, fmt.Sprintf("each took one of the %d first actions, then all ask at once from step 1",
		len(first)), `{"from_step":1}`)
	round(base, ids, "all ask again from step 0", `{"from_step":0}`)

	room.stopAndPrint(*n)
	keepEnd()
	freedUnread(base, *n)
	boundOfSixty(base)
}

// startMarket starts the market binary on port, its output in a
// temporary file (named by logName), and waits until base answers.
func startMarket(bin string, port int, base string) (cmd *exec.Cmd, logName string) {
	cmd = exec.Command(bin, "-addr", fmt.Sprintf("127.0.0.1:%d", port), "-redis", "auto", "-seed-demo",
		"-sessions-per-address", "60", "-admin-token", token)
	fmt.Printf("# market: %s\n", strings.Join(cmd.Args[1:], " "))
	logf, err := os.CreateTemp("", "market-log-")
	must(err)
	cmd.Stdout, cmd.Stderr = logf, logf
	// The port must be free: another market there would be measured.
	if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
		fmt.Fprintf(os.Stderr, "port %d: %v\n", port, err)
		os.Remove(logf.Name())
		die()
	} else {
		ln.Close()
	}
	must(cmd.Start())
	marketProc = cmd
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if code, _, err := call("GET", base+"/api/market", ""); err == nil && code == 200 {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintln(os.Stderr, "the market did not answer within 30 s")
			die()
		}
	}
	return cmd, logf.Name()
}

// room is the class's reads of the market and the users while the
// sessions search, with what they saw.
type room struct {
	stop                      context.CancelFunc
	wg                        sync.WaitGroup
	mu                        sync.Mutex
	marketMax                 time.Duration
	marketReads, marketFailed int
	userCodes                 map[int]int
}

// readRoom starts the room's reads: the market every 100 ms, the users by
// n pages every 3 s (spread over the 3 s), until stopAndPrint.
func readRoom(base string, n int) *room {
	ctx, stop := context.WithCancel(context.Background())
	r := &room{stop: stop, userCodes: map[int]int{}}
	r.wg.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			t0 := time.Now()
			code, _, err := call("GET", base+"/api/market?limit=100", "")
			d := time.Since(t0)
			r.mu.Lock()
			r.marketReads++
			if err != nil || code != 200 {
				r.marketFailed++
			}
			r.marketMax = max(r.marketMax, d)
			r.mu.Unlock()
		}
	})
	for i := range n {
		r.wg.Go(func() { r.readUsers(ctx, base, time.Duration(i)*3*time.Second/time.Duration(n)) })
	}
	return r
}

// readUsers is one page reading the users every 3 s, after a first wait.
func (r *room) readUsers(ctx context.Context, base string, wait time.Duration) {
	select {
	case <-ctx.Done():
		return
	case <-time.After(wait):
	}
	tick := time.NewTicker(3 * time.Second)
	defer tick.Stop()
	for {
		code, _, err := call("GET", base+"/api/users?limit=500", "")
		if err != nil {
			code = -1
		}
		r.mu.Lock()
		r.userCodes[code]++
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// stopAndPrint stops the room's reads and prints what they saw.
func (r *room) stopAndPrint(n int) {
	r.stop()
	r.wg.Wait()
	fmt.Printf("GET /api/market?limit=100 every 100 ms meanwhile: %d reads, %d failed, longest %.3f s\n",
		r.marketReads, r.marketFailed, r.marketMax.Seconds())
	fmt.Printf("GET /api/users?limit=500 by %d pages every 3 s meanwhile: %v (status: count)\n", n, r.userCodes)
}

// openSessions opens n sessions from this one address, without the
// token, and prints their answers.
func openSessions(base string, n int) (ids []string, starts []state) {
	ids = make([]string, n)
	starts = make([]state, n)
	codes := map[int]int{}
	var smu sync.Mutex
	var swg sync.WaitGroup
	refusals := map[string]int{}
	for i := range n {
		swg.Go(func() {
			// A refused start is tried again a second later, as a student
			// presses Start again; each answer is counted.
			for range 5 {
				code, body, err := call("POST", base+"/api/explore/sessions", `{"recipe":"6","fixed":true}`)
				must(err)
				var s struct {
					ID    string `json:"id"`
					State state  `json:"state"`
				}
				smu.Lock()
				codes[code]++
				if code == http.StatusCreated {
					must(json.Unmarshal(body, &s))
					ids[i], starts[i] = s.ID, s.State
				} else {
					refusals[string(bytes.TrimSpace(body))]++
				}
				smu.Unlock()
				if code == http.StatusCreated {
					return
				}
				time.Sleep(time.Second)
			}
		})
	}
	swg.Wait()
	fmt.Printf("sessions of recipe 6's fix opened from one address without the token: %v (status: count, "+
		"a refused start tried again after 1 s)\n", codes)
	for msg, k := range refusals {
		fmt.Printf("  refused %d times: %s\n", k, msg)
	}
	for _, id := range ids {
		if id == "" {
			fmt.Println("not every student got a session")
			die()
		}
	}
	return ids, starts
}

// keepReading has each page read its session every 15 s, as the page
// does, until the class leaves: the function it returns ends the reads
// and waits for them.
func keepReading(base string, ids []string) func() {
	keepCtx, keepEnd := context.WithCancel(context.Background())
	var kwg sync.WaitGroup
	for _, id := range ids {
		kwg.Go(func() {
			tick := time.NewTicker(15 * time.Second)
			defer tick.Stop()
			for {
				select {
				case <-keepCtx.Done():
					return
				case <-tick.C:
				}
				call("GET", base+"/api/explore/sessions/"+id, "")
			}
		})
	}
	return func() { keepEnd(); kwg.Wait() }
}

// round has every session ask for a search with body at once, follows
// them all to their answers and prints what they were.
func round(base string, ids []string, name, body string) {
	n := len(ids)
	answers := make([]answer, n)
	t0 := time.Now()
	var rwg sync.WaitGroup
	for i := range n {
		rwg.Go(func() { answers[i] = follow(base, ids[i], body) })
	}
	rwg.Wait()
	all := time.Since(t0)
	states := map[string]int{}
	exhaustive, kept := 0, 0
	var took []time.Duration
	maxQueue, maxFollows := 0, 0
	for _, a := range answers {
		k := a.fin.State
		if a.fin.Error != "" {
			k += " (" + a.fin.Error + ")"
		} else if a.fin.Note != "" {
			k += " (" + a.fin.Note + ")"
		}
		states[k]++
		if a.fin.Result != nil && a.fin.Result.Exhaustive {
			exhaustive++
		}
		if a.fin.Kept {
			kept++
		}
		took = append(took, a.took)
		maxQueue, maxFollows = max(maxQueue, a.maxQueue), max(maxFollows, a.maxFollows)
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	fmt.Printf("%s:\n  answers: %v; exhaustive: %d of %d; kept answers: %d\n", name, states, exhaustive, n, kept)
	fmt.Printf("  every session answered %.1f s after the first asked; per session: median %.1f s, longest %.1f s\n",
		all.Seconds(), took[len(took)/2].Seconds(), took[len(took)-1].Seconds())
	fmt.Printf("  most sessions seen following one search: %d; deepest place in the queue seen: %d\n",
		maxFollows, maxQueue)
}

// freedUnread waits until the service has freed the n sessions left
// unread, as a killed browser leaves them, and prints how long it took.
func freedUnread(base string, n int) {
	lastRead := time.Now()
	for {
		open := sessionsOpen(base)
		if open == 0 {
			fmt.Printf("the %d sessions left unread (no DELETE) were all freed %.1f s after their last read\n",
				n, time.Since(lastRead).Seconds())
			return
		}
		if time.Since(lastRead) > 3*time.Minute {
			fmt.Printf("%d sessions still open 3 minutes after their last read\n", open)
			die()
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// boundOfSixty asks for 61 sessions from one address: 60 open, the 61st
// is refused.
func boundOfSixty(base string) {
	codes := map[int]int{}
	var msg string
	for range 61 {
		code, body, err := call("POST", base+"/api/explore/sessions", `{"recipe":"1"}`)
		must(err)
		codes[code]++
		if code != http.StatusCreated {
			msg = string(bytes.TrimSpace(body))
		}
	}
	fmt.Printf("61 sessions asked for from one address: %v (status: count); the refusal: %s\n", codes, msg)
}

// follow asks session id for a search with body and reads the session
// every 400 ms, as the page does, until the search has ended.
func follow(base, id, body string) answer {
	t0 := time.Now()
	var a answer
	code, b, err := call("POST", base+"/api/explore/sessions/"+id+"/find", body)
	must(err)
	if code != http.StatusAccepted {
		fmt.Fprintf(os.Stderr, "find on %s: %d %s\n", id, code, b)
		die()
	}
	for {
		var st state
		must(json.Unmarshal(b, &st))
		f := st.Find
		a.maxQueue, a.maxFollows = max(a.maxQueue, f.QueuePosition), max(a.maxFollows, f.Following)
		if f.State != "running" {
			a.fin, a.took = *f, time.Since(t0)
			return a
		}
		if time.Since(t0) > 10*time.Minute {
			fmt.Fprintf(os.Stderr, "session %s: still searching after 10 minutes\n", id)
			die()
		}
		time.Sleep(400 * time.Millisecond)
		code, b, err = call("GET", base+"/api/explore/sessions/"+id, "")
		must(err)
		if code != 200 {
			fmt.Fprintf(os.Stderr, "state of %s: %d %s\n", id, code, b)
			die()
		}
	}
}

// sessionsOpen reads lockmarket_explore_sessions from /metrics.
func sessionsOpen(base string) int {
	_, b, err := call("GET", base+"/metrics", "")
	must(err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "lockmarket_explore_sessions "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			must(err)
			return n
		}
	}
	fmt.Fprintln(os.Stderr, "no lockmarket_explore_sessions in /metrics")
	die()
	return 0
}

// marketProc is the market started, stopped by die too.
var marketProc *exec.Cmd

// die stops the market and exits 1.
func die() {
	if marketProc != nil {
		marketProc.Process.Signal(os.Interrupt)
		marketProc.Wait()
	}
	os.Exit(1)
}

func must(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		die()
	}
}
