package httpapi

import (
	"encoding/json"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestExploreLua: a lock pasted as Lua through the sessions' API. Lua
// that does not parse is 400 with the parser's message; a script that
// loops forever is stopped at its step's budget: its step answers 400
// saying so, while another session's request, sent meanwhile, answers;
// the stopped session answers after it. A step with a field no action
// has is 400, and so are a pasted lock's bounds out of range (clients 2 or
// 3, the faults the page offers) and bounds beside a recipe. The served
// market's keys are untouched.
func TestExploreLua(t *testing.T) {
	t.Parallel() // servers of its own
	redistest.RequireServer(t)
	b := redistest.Mini(t)
	srv, f := newJobsServer(t, b)
	h := srv.Handler()
	before := redistest.Snapshot(t, f.rdb)

	r := serve(h, "POST", "/api/explore/sessions", `{"lua":{"acquire":"if redis.call('GET', KEYS[1]) then\nreturn = 1 end","release":"return 0"}}`)
	if r.status != 400 || r.code() != "invalid_request" || !strings.Contains(string(r.body), "your acquire script does not parse") ||
		!strings.Contains(string(r.body), "line 2") {
		t.Errorf("Lua that does not parse: %d %s", r.status, r.body)
	}
	t.Logf("Lua that does not parse: %s", r.body)
	r = serve(h, "POST", "/api/explore/sessions", `{"lua":{"acquire":"return 1","release":"return 1"},"recipe":"1"}`)
	if r.status != 400 {
		t.Errorf("lua with a recipe: %d %s", r.status, r.body)
	}
	for _, body := range []string{`{"lua":{"acquire":"return 1","release":"return 1"},"clients":4}`,
		`{"lua":{"acquire":"return 1","release":"return 1"},"faults":["clock-jump"]}`, `{"recipe":"6","clients":3}`} {
		if r := serve(h, "POST", "/api/explore/sessions", body); r.status != 400 || r.code() != "invalid_request" {
			t.Errorf("%s: %d %s, want 400", body, r.status, r.body)
		}
	}

	start := func(body string) (string, exploreState) {
		t.Helper()
		r := serve(h, "POST", "/api/explore/sessions", body)
		var ans struct {
			ID    string       `json:"id"`
			State exploreState `json:"state"`
		}
		if r.status != 201 || json.Unmarshal(r.body, &ans) != nil {
			t.Fatalf("start %s: %d %s", body, r.status, r.body)
		}
		return ans.ID, ans.State
	}
	step := func(id, action string) response {
		return serve(h, "POST", "/api/explore/sessions/"+id+"/steps", action)
	}
	other, _ := start(`{"recipe":"1"}`)
	id, st := start(`{"lua":{"acquire":"while true do end","release":"return 0"}}`)
	r = step(id, enabled(t, st, "start", "A"))
	if r.status != 200 || json.Unmarshal(r.body, &st) != nil {
		t.Fatalf("A starts: %d %s", r.status, r.body)
	}
	var wg sync.WaitGroup
	var looped response
	run := enabled(t, st, "run", "A") // on the test's goroutine: it may fail the test
	wg.Go(func() { looped = step(id, run) })
	if r := serve(h, "GET", "/api/explore/sessions/"+other, ""); r.status != 200 {
		t.Errorf("another session while the loop runs: %d %s", r.status, r.body)
	}
	wg.Wait()
	if looped.status != 400 || !strings.Contains(string(looped.body), "the step ran past its budget of 2s") {
		t.Errorf("the loop: %d %s", looped.status, looped.body)
	}
	if r := serve(h, "GET", "/api/explore/sessions/"+id, ""); r.status != 200 {
		t.Errorf("the stopped session: %d %s", r.status, r.body)
	}
	a := enabled(t, st, "run", "A")
	r = step(id, a[:len(a)-1]+`,"bogus":1}`)
	if r.status != 400 || r.code() != "invalid_request" || !strings.Contains(string(r.body), `unknown field \"bogus\"`) {
		t.Errorf("a step with an unknown field: %d %s", r.status, r.body)
	}
	if after := redistest.Snapshot(t, f.rdb); !maps.Equal(before, after) {
		t.Errorf("the sessions changed the served Redis: %d keys before, %d after", len(before), len(after))
	}
}
