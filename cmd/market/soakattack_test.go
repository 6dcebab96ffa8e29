package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// soakAttackersEnv set to 1 runs the soak with attackers of the explorer's
// sandboxes beside its clients (soakAttackers).
const soakAttackersEnv = "LOCKMARKET_SOAK_ATTACKERS"

// soakAttacks are the attackers' pasted acquire scripts: a loop, 16 MiB of
// NUL bytes in the explorer's counter, a memory grab, a counter the
// explorer cannot read, a table reply, and a search of a lock that loops.
var soakAttacks = []struct {
	name, acquire string
	find          bool
}{
	{"loop", "while true do end", false},
	{"NULs", counterOf + `redis.call('SETRANGE', c, 16 * 1024 * 1024 - 1, '\0') return 0`, false},
	{"memory", "local t = {} while true do pcall(function() t[#t + 1] = ('y'):rep(2^22) .. #t end) end", false},
	{"odd counter", takeLock + counterOf + `redis.call('SET', c, '1.5') return 1`, false},
	{"table reply", takeLock + "return {1, 'x'}", false},
	{"search of a loop", takeLock + "while true do end", true},
}

// soakAttackers runs the attackers, 3 sessions from each of two loopback
// addresses (127.0.3.1 and 127.0.3.2), until l's deadline: each opens a
// session, steps it until a step is refused or the schedule ends (or asks
// for a search and reads it until it ends), deletes it, and starts again.
// It returns their answers by status, and the 5xx among them.
func soakAttackers(l *loader) (map[string]int, []string) {
	var mu sync.Mutex
	counts := map[string]int{}
	var fails []string
	note := func(what string, st int, body []byte) {
		mu.Lock()
		defer mu.Unlock()
		counts[fmt.Sprint(st)]++
		if st >= 500 || st == 0 {
			fails = append(fails, fmt.Sprintf("%s: %d %.200s", what, st, body))
		}
	}
	var wg sync.WaitGroup
	for i, a := range soakAttacks {
		wg.Go(func() {
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 3, byte(1+i%2))}}
			hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
				DialContext: func(ctx context.Context, nw, addr string) (net.Conn, error) {
					return d.DialContext(ctx, nw, addr)
				}}}
			defer hc.CloseIdleConnections()
			w := &loadWorker{l: &loader{hc: hc, base: l.base}, id: -3 - i, user: "attacker"}
			for time.Until(l.deadline) > 5*time.Second {
				attackOnce(w, a.acquire, a.find, l.deadline, func(what string, st int, body []byte) {
					note(a.name+" "+what, st, body)
				})
			}
		})
	}
	wg.Wait()
	return counts, fails
}

// attackOnce runs one session of an attacker.
func attackOnce(w *loadWorker, acquire string, find bool, deadline time.Time, note func(string, int, []byte)) {
	const release = `return 0`
	st, _, body := w.call("POST", "/api/explore/sessions",
		map[string]any{"lua": map[string]string{"acquire": acquire, "release": release}})
	note("start", st, body)
	var s struct {
		ID    string `json:"id"`
		State struct {
			Enabled []json.RawMessage `json:"enabled"`
			Find    *struct {
				State string `json:"state"`
			} `json:"find"`
		} `json:"state"`
	}
	if st != http.StatusCreated || json.Unmarshal(body, &s) != nil {
		time.Sleep(time.Second)
		return
	}
	path := "/api/explore/sessions/" + s.ID
	defer func() {
		st, _, body := w.call("DELETE", path, nil)
		note("delete", st, body)
	}()
	for time.Now().Before(deadline) && len(s.State.Enabled) > 0 {
		if find {
			st, _, body = w.call("POST", path+"/find", map[string]any{})
			note("find", st, body)
			for st == http.StatusAccepted || st == http.StatusOK {
				time.Sleep(500 * time.Millisecond)
				var got struct {
					Find *struct{ State string } `json:"find"`
				}
				st, _, body = w.call("GET", path, nil)
				note("read", st, body)
				if json.Unmarshal(body, &got) != nil || got.Find == nil || got.Find.State != "running" ||
					!time.Now().Before(deadline) {
					break
				}
			}
		}
		st, _, body = w.call("POST", path+"/steps", s.State.Enabled[0])
		note("step", st, body)
		if st != http.StatusOK || json.Unmarshal(body, &s.State) != nil {
			return
		}
	}
}

// soakAttacking reports whether the soak runs with attackers.
func soakAttacking() bool { return os.Getenv(soakAttackersEnv) == "1" }
