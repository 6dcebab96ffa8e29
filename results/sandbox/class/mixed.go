package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The mixed class: honest students beside attackers from two addresses.
const (
	correctAcquire = "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end return 0"
	correctRelease = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
	// honestSteps is how many steps each honest student takes before
	// asking for a search.
	honestSteps = 10
	// honestGroups is how many different searches the honest students
	// ask for (a comment tells their locks apart): the students of a
	// group share one.
	honestGroups = 4
)

// mixedAttacks are the attackers' acquire scripts: loops, memory, NUL
// bytes, and a search of a lock that loops.
var mixedAttacks = []struct {
	name, src string
	find      bool // asks for searches rather than steps
}{
	{"loop", "while true do end", false},
	{"NULs in the counter", "local c = string.gsub(KEYS[1], '}:.*$', '}:counter') " +
		"redis.call('SETRANGE', c, 16 * 1024 * 1024 - 1, '\\0') return 0", false},
	{"search of a loop", "if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then " +
		"while true do end end return 0", true},
	{"memory grab", "local t = {} while true do pcall(function() t[#t + 1] = ('y'):rep(2^22) .. #t end) end", false},
	{"search of a correct lock", correctAcquire + " -- long", true},
	{"loop in pcall", "while true do pcall(function() while true do end end) end", false},
}

// tally counts answers by status, safe for concurrent use.
type tally struct {
	mu sync.Mutex
	by map[int]int
}

func (t *tally) add(status int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.by == nil {
		t.by = map[int]int{}
	}
	t.by[status]++
}

func (t *tally) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var keys []int
	for k := range t.by {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d: %d", k, t.by[k]))
	}
	return strings.Join(parts, ", ")
}

// honestResult is what one honest student saw.
type honestResult struct {
	steps, refused int
	refusal        string
	// estimate and most are the first wait_estimate_ms and wait_most_ms
	// read while the find waited (-1: it never waited); waited how long
	// it waited for a CPU; state how the search ended.
	estimate, most int64
	waited         time.Duration
	state          string
}

type sessionState struct {
	Enabled []json.RawMessage `json:"enabled"`
	Find    *struct {
		State          string `json:"state"`
		Waiting        bool   `json:"waiting"`
		WaitEstimateMS int64  `json:"wait_estimate_ms"`
		WaitMostMS     int64  `json:"wait_most_ms"`
		Error          string `json:"error"`
	} `json:"find"`
}

// mixedClass runs honest students and 6 attackers (3 sessions from each
// of two addresses) against the service at base for about d, polling
// GET /api/market and sampling the service's memory (pid) throughout.
func mixedClass(base string, pid, honest int, d time.Duration) {
	rest := rssKiB(pid)
	deadline := time.Now().Add(d)
	var all tally
	stop := make(chan struct{})
	var bg sync.WaitGroup
	var lat []time.Duration
	var pollFails atomic.Int64
	bg.Go(func() { lat = pollMarket(base, stop, &pollFails) })
	var peak atomic.Int64
	bg.Go(func() {
		for {
			peak.Store(max(peak.Load(), int64(rssKiB(pid))))
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	})
	var attackers sync.WaitGroup
	attackerAnswers := make([]tally, len(mixedAttacks))
	for i, a := range mixedAttacks {
		attackers.Go(func() {
			c := clientFrom(net.IPv4(127, 0, 3, byte(1+i%2)))
			attack(c, base, a.src, a.find, deadline, &attackerAnswers[i], &all)
		})
	}
	time.Sleep(3 * time.Second) // the attacks under way
	results := make([]honestResult, honest)
	var students sync.WaitGroup
	for i := range honest {
		students.Go(func() {
			// a class comes in over a quarter of a minute
			time.Sleep(time.Duration(i) * 15 * time.Second / time.Duration(honest))
			c := clientFrom(net.IPv4(127, 0, 4, byte(10+i)))
			c.Timeout = 5 * time.Minute
			results[i] = student(c, base, i, &all)
		})
	}
	students.Wait()
	attackers.Wait()
	close(stop)
	bg.Wait()
	printMixed(results, attackerAnswers, &all, lat, pollFails.Load(), rest, int(peak.Load()), pid)
}

// attack runs one attacker's session until deadline: steps (each answer
// counted), or searches asked for again as each ends.
func attack(c *http.Client, base, src string, find bool, deadline time.Time, mine, all *tally) {
	for time.Now().Before(deadline) {
		body, _ := json.Marshal(map[string]any{"lua": map[string]string{"acquire": src, "release": correctRelease}})
		st, out, _ := post(c, base+"/api/explore/sessions", body)
		mine.add(st)
		all.add(st)
		if st != 201 {
			time.Sleep(time.Second)
			continue
		}
		var s struct {
			ID    string       `json:"id"`
			State sessionState `json:"state"`
		}
		json.Unmarshal(out, &s)
		path := base + "/api/explore/sessions/" + s.ID
		for time.Now().Before(deadline) && len(s.State.Enabled) > 0 {
			if find {
				st, _, _ = post(c, path+"/find", []byte(`{}`))
				mine.add(st)
				all.add(st)
				waitFind(c, path, deadline, all)
				// the same search again is its kept answer: search
				// from another step
				st, out, _ = post(c, path+"/steps", s.State.Enabled[0])
			} else {
				st, out, _ = post(c, path+"/steps", s.State.Enabled[0])
			}
			mine.add(st)
			all.add(st)
			if st != 200 || json.Unmarshal(out, &s.State) != nil {
				break
			}
		}
		del(c, path, all)
	}
}

// student opens a session of a correct lock, takes honestSteps steps,
// asks for a search and waits for its end, and deletes the session.
func student(c *http.Client, base string, i int, all *tally) honestResult {
	res := honestResult{estimate: -1, most: -1}
	acquire := fmt.Sprintf("%s -- group %d", correctAcquire, i%honestGroups)
	body, _ := json.Marshal(map[string]any{"lua": map[string]string{"acquire": acquire, "release": correctRelease}})
	st, out, _ := post(c, base+"/api/explore/sessions", body)
	all.add(st)
	if st != 201 {
		res.refused, res.refusal = 1, fmt.Sprintf("start %d %.200s", st, out)
		return res
	}
	var s struct {
		ID    string       `json:"id"`
		State sessionState `json:"state"`
	}
	json.Unmarshal(out, &s)
	path := base + "/api/explore/sessions/" + s.ID
	defer del(c, path, all)
	for k := 0; k < honestSteps && len(s.State.Enabled) > 0; k++ {
		st, out, _ = post(c, path+"/steps", s.State.Enabled[0])
		all.add(st)
		res.steps++
		if st != 200 {
			res.refused++
			res.refusal = fmt.Sprintf("step %d: %d %.200s", k+1, st, out)
			return res
		}
		json.Unmarshal(out, &s.State)
	}
	t0 := time.Now()
	st, out, _ = post(c, path+"/find", []byte(`{}`))
	all.add(st)
	var fs sessionState
	json.Unmarshal(out, &fs)
	started := false
	for fs.Find != nil && fs.Find.State == "running" && time.Since(t0) < 6*time.Minute {
		if fs.Find.Waiting && res.estimate < 0 {
			res.estimate, res.most = fs.Find.WaitEstimateMS, fs.Find.WaitMostMS
		}
		if !fs.Find.Waiting && !started {
			started, res.waited = true, time.Since(t0)
		}
		time.Sleep(250 * time.Millisecond)
		st, out = get(c, path)
		all.add(st)
		json.Unmarshal(out, &fs)
	}
	if !started {
		res.waited = time.Since(t0)
	}
	if fs.Find != nil {
		res.state = fs.Find.State
	}
	return res
}

// waitFind reads the session at path until its search has ended.
func waitFind(c *http.Client, path string, deadline time.Time, all *tally) {
	for time.Now().Before(deadline) {
		st, out := get(c, path)
		all.add(st)
		var s sessionState
		if st != 200 || json.Unmarshal(out, &s) != nil || s.Find == nil || s.Find.State != "running" {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func get(c *http.Client, url string) (int, []byte) {
	r, err := c.Get(url)
	if err != nil {
		return 0, nil
	}
	defer r.Body.Close()
	out, _ := io.ReadAll(r.Body)
	return r.StatusCode, out
}

func del(c *http.Client, path string, all *tally) {
	req, _ := http.NewRequest("DELETE", path, nil)
	r, err := c.Do(req)
	if err != nil {
		all.add(0)
		return
	}
	r.Body.Close()
	all.add(r.StatusCode)
}

// pollMarket reads GET /api/market every 100 ms until stop, and returns
// each answer's time.
func pollMarket(base string, stop <-chan struct{}, fails *atomic.Int64) []time.Duration {
	c := &http.Client{Timeout: 10 * time.Second}
	var lat []time.Duration
	for {
		select {
		case <-stop:
			return lat
		case <-time.After(100 * time.Millisecond):
		}
		t0 := time.Now()
		r, err := c.Get(base + "/api/market")
		lat = append(lat, time.Since(t0))
		if err != nil {
			fails.Add(1)
			continue
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		if r.StatusCode != 200 {
			fails.Add(1)
		}
	}
}

// printMixed reports the mixed class.
func printMixed(results []honestResult, attackers []tally, all *tally, lat []time.Duration, fails int64,
	rest, peak, pid int) {
	steps, refused := 0, 0
	fmt.Printf("%-8s %5s %7s %9s %9s %9s  %s\n", "student", "steps", "refused", "est_s", "most_s", "waited_s",
		"search / refusal")
	for i, r := range results {
		steps += r.steps
		refused += r.refused
		fmt.Printf("%-8d %5d %7d %9.1f %9.1f %9.1f  %s%s\n", i, r.steps, r.refused, float64(r.estimate)/1000,
			float64(r.most)/1000, r.waited.Seconds(), r.state, r.refusal)
	}
	fmt.Printf("honest students: %d steps, %d refused\n", steps, refused)
	var errs []float64
	for _, r := range results {
		if r.estimate >= 0 {
			errs = append(errs, r.waited.Seconds()-float64(r.estimate)/1000)
		}
	}
	if len(errs) > 0 {
		slices.Sort(errs)
		over := 0
		for i, r := range results {
			if r.estimate >= 0 && r.most >= 0 && r.waited.Milliseconds() > r.most+1000 {
				over++
				fmt.Printf("student %d waited past wait_most_ms\n", i)
			}
		}
		fmt.Printf("finds that waited: %d; waited minus estimate: min %.1f s, median %.1f s, max %.1f s; "+
			"%d waited past wait_most_ms (+1 s)\n", len(errs), errs[0], errs[len(errs)/2], errs[len(errs)-1], over)
	}
	for i, a := range mixedAttacks {
		fmt.Printf("attacker %d (127.0.3.%d) %-26s answers %s\n", i, 1+i%2, a.name, attackers[i].String())
	}
	fmt.Printf("every answer of the class by status: %s\n", all.String())
	slices.Sort(lat)
	if n := len(lat); n > 0 {
		fmt.Printf("GET /api/market every 100 ms: %d polls, %d failed, p50 %.3f s, p99 %.3f s, longest %.3f s\n",
			n, fails, lat[n/2].Seconds(), lat[n*99/100].Seconds(), lat[n-1].Seconds())
	}
	fmt.Printf("service RSS: %d KiB at rest, %d KiB at most (+%.1f MiB); %d KiB after\n", rest, peak,
		float64(peak-rest)/1024, rssKiB(pid))
}
