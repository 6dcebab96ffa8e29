package httpapi

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/step"
	"github.com/lockmarket/lockmarket/internal/service/api"
	"github.com/lockmarket/lockmarket/internal/service/exploresession"
	"github.com/lockmarket/lockmarket/internal/testsupport/jsonkeys"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// exploreState is the part of a session's state the tests read.
type exploreState struct {
	Target     string             `json:"target"`
	Clients    []string           `json:"clients"`
	Steps      []action.Step      `json:"steps"`
	Enabled    []action.Action    `json:"enabled"`
	ClockMS    int64              `json:"clock_ms"`
	Holders    []step.Holder      `json:"holders"`
	Violations []result.Violation `json:"violations"`
	Resource   string             `json:"resource"`
}

// enabled is the JSON of client's enabled action of kind (run: its next
// command; start: its start) in st.
func enabled(t *testing.T, st exploreState, kind, client string) string {
	t.Helper()
	for _, a := range st.Enabled {
		if a.Kind == kind && a.Client == client {
			b, _ := json.Marshal(a)
			return string(b)
		}
	}
	t.Fatalf("%s has no %s enabled: %+v", client, kind, st.Enabled)
	return ""
}

// TestExploreSessions drives the explorer sessions' API as the page does:
// recipe 1 stepped (A and B start) A GET, B GET, A SET, B SET breaks mutual exclusion at
// B's SET, undo takes it back; a search in recipe 6 finds the lock
// holding and shows a resource violation, not promised, whose actions
// replay to it; bad requests get 400, unknown
// sessions 404, one session over the limit 409; the served market's keys
// are untouched.
func TestExploreSessions(t *testing.T) {
	t.Parallel() // servers of its own
	b := redistest.Mini(t)
	srv, f := newJobsServer(t, b)
	h := srv.Handler()
	before := redistest.Snapshot(t, f.rdb)

	start := func(body string) (string, exploreState) {
		t.Helper()
		r := serve(h, "POST", "/api/explore/sessions", body)
		var ans struct {
			ID    string       `json:"id"`
			State exploreState `json:"state"`
		}
		r.decode(t, &ans)
		if r.status != http.StatusCreated || ans.ID == "" || r.header.Get("Location") != "/api/explore/sessions/"+ans.ID {
			t.Fatalf("start %s: %d %s", body, r.status, r.body)
		}
		jsonkeys.Check(t, "explore session", r.body)
		return ans.ID, ans.State
	}
	step := func(id, action string) exploreState {
		t.Helper()
		r := serve(h, "POST", "/api/explore/sessions/"+id+"/steps", action)
		var st exploreState
		r.decode(t, &st)
		if r.status != http.StatusOK {
			t.Fatalf("step %s: %d %s", action, r.status, r.body)
		}
		return st
	}

	for _, tc := range []struct{ name, body string }{
		{"empty", `{}`},
		{"unknown recipe", `{"recipe":"7"}`},
		{"both", `{"recipe":"1","strategy":"fine"}`},
		{"unknown strategy", `{"strategy":"finest"}`},
		{"a strategy fixed", `{"strategy":"fine","fixed":true}`},
		{"wrong type", `{"recipe":1}`},
		{"unknown field", `{"recipe":"1","clients":9}`},
	} {
		if r := serve(h, "POST", "/api/explore/sessions", tc.body); r.status != 400 || r.code() != CodeInvalidRequest {
			t.Errorf("%s: %d %s", tc.name, r.status, r.body)
		}
	}

	// A market strategy is a target too.
	if ids, sts := start(`{"strategy":"fine","fencing":true}`); sts.Target != "strategy fine fenced" || len(sts.Clients) != 3 {
		t.Errorf("strategy fine fenced at the start: %+v", sts)
	} else if r := serve(h, "DELETE", "/api/explore/sessions/"+ids, ""); r.status != http.StatusNoContent {
		t.Errorf("DELETE the strategy session: %d %s", r.status, r.body)
	}

	// Recipe 1, as a class would step it.
	id, st := start(`{"recipe":"1"}`)
	if st.Target != "recipe 1" || len(st.Clients) != 2 || len(st.Steps) != 0 || len(st.Enabled) == 0 || len(st.Violations) != 0 {
		t.Fatalf("recipe 1 at the start: %+v", st)
	}
	st = step(id, enabled(t, st, action.Start, "A"))
	st = step(id, enabled(t, st, action.Start, "B"))
	for _, c := range []string{"A", "B", "A", "B"} {
		st = step(id, enabled(t, st, action.Run, c))
	}
	if len(st.Steps) != 6 || len(st.Violations) != 1 || st.Violations[0].Property != result.MutualExclusion ||
		st.Violations[0].Step != 5 || st.Steps[5].Action.Client != "B" || !strings.HasPrefix(st.Steps[5].Text, "SET") {
		t.Fatalf("after A GET, B GET, A SET, B SET: %+v", st)
	}
	if len(st.Holders) != 2 {
		t.Errorf("holders %+v, want A and B", st.Holders)
	}
	for _, tc := range []struct{ name, action string }{
		{"not enabled", `{"kind":"run","client":"Z","command":"GET lock:L"}`},
		{"unknown kind", `{"kind":"jump","client":"A"}`},
		{"unknown field", `{"kind":"run","client":"A","when":"now"}`},
		{"not an object", `"A"`},
	} {
		if r := serve(h, "POST", "/api/explore/sessions/"+id+"/steps", tc.action); r.status != 400 || r.code() != CodeInvalidRequest {
			t.Errorf("%s: %d %s", tc.name, r.status, r.body)
		}
	}
	r := serve(h, "POST", "/api/explore/sessions/"+id+"/undo", "")
	r.decode(t, &st)
	if r.status != http.StatusOK || len(st.Steps) != 5 || len(st.Violations) != 0 {
		t.Fatalf("undo: %d %s", r.status, r.body)
	}
	var got exploreState
	if r := serve(h, "GET", "/api/explore/sessions/"+id, ""); r.status != 200 {
		t.Fatalf("GET: %d %s", r.status, r.body)
	} else if r.decode(t, &got); len(got.Steps) != 5 {
		t.Errorf("GET after undo: %+v", got)
	}

	// Recipe 6: once A has taken the lock, read the counter and paused
	// past its lease (which keeps the search small), a search run as a
	// job the state reports finds that the lock keeps what it promises,
	// then the lost update it does not promise; taking its actions
	// breaks the resource.
	id6, st6 := start(`{"recipe":"6"}`)
	for _, a := range []string{enabled(t, st6, "start", "A"), "", "", `{"kind":"pause","client":"A","length":"long"}`} {
		if a == "" {
			a = enabled(t, st6, "run", "A")
		}
		st6 = step(id6, a)
	}
	r = serve(h, "POST", "/api/explore/sessions/"+id6+"/find", "{}")
	if r.status != http.StatusAccepted {
		t.Fatalf("find on recipe 6: %d %s", r.status, r.body)
	}
	jsonkeys.Check(t, "find", r.body)
	found := waitFind(t, h, id6)
	if found.Unpromised == nil {
		t.Fatalf("find on recipe 6: no search of what the lock does not promise: %+v", found)
	}
	c := found.Unpromised.Counterexample()
	if found.State != api.FindNone || found.Result == nil || !found.Result.Exhaustive || c == nil ||
		c.Property != result.Resource || !c.Reproduced || len(c.Actions) <= found.FromStep || found.FromStep != 4 ||
		found.Result.Model.Clients == 0 {
		t.Fatalf("find on recipe 6: %+v", found)
	}
	for _, a := range c.Actions[found.FromStep:] {
		b, _ := json.Marshal(a)
		st6 = step(id6, string(b))
	}
	if len(st6.Violations) == 0 || st6.Violations[len(st6.Violations)-1].Property != result.Resource ||
		!strings.HasPrefix(st6.Resource, "counter = ") {
		t.Fatalf("recipe 6 after the counterexample: %+v", st6)
	}
	if r := serve(h, "DELETE", "/api/explore/sessions/"+id6+"/find", ""); r.status != http.StatusNotFound {
		t.Errorf("cancel with no search since the last step: %d %s", r.status, r.body)
	}

	// Unknown sessions.
	if r := serve(h, "DELETE", "/api/explore/sessions/nope/find", ""); r.status != 404 {
		t.Errorf("DELETE nope/find: %d %s", r.status, r.body)
	}
	for p, body := range map[string]string{"/steps": `{"kind":"run","client":"A"}`, "/undo": "", "/find": "{}"} {
		if r := serve(h, "POST", "/api/explore/sessions/nope"+p, body); r.status != 404 || r.code() != CodeNotFound {
			t.Errorf("POST nope%s: %d %s", p, r.status, r.body)
		}
	}
	if r := serve(h, "GET", "/api/explore/sessions/nope", ""); r.status != 404 {
		t.Errorf("GET nope: %d %s", r.status, r.body)
	}

	// A few per client: the next one over the limit is refused, and one
	// ended makes room.
	for range exploresession.DefaultPerClient - 2 {
		start(`{"recipe":"2"}`)
	}
	if r := serve(h, "POST", "/api/explore/sessions", `{"recipe":"3"}`); r.status != 409 || r.code() != CodeBusy ||
		!strings.Contains(r.code()+string(r.body), "your address holds") {
		t.Errorf("one session too many: %d %s", r.status, r.body)
	}
	if r := serve(h, "DELETE", "/api/explore/sessions/"+id, ""); r.status != http.StatusNoContent {
		t.Errorf("DELETE: %d %s", r.status, r.body)
	}
	if r := serve(h, "POST", "/api/explore/sessions/"+id+"/undo", ""); r.status != 404 {
		t.Errorf("undo after DELETE: %d %s", r.status, r.body)
	}
	start(`{"recipe":"3"}`)

	m := string(serve(h, "GET", "/metrics", "").body)
	for _, want := range []string{fmt.Sprintf("lockmarket_explore_sessions %d\n", exploresession.DefaultPerClient),
		`lockmarket_explore_steps_total{kind="run"}`, `lockmarket_explore_finds_total{found="true"} 1` + "\n"} {
		if !strings.Contains(m, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if after := redistest.Snapshot(t, f.rdb); !maps.Equal(before, after) {
		t.Errorf("the sessions changed the served Redis: %d keys before, %d after", len(before), len(after))
	}
}

// waitFind polls session id until its search has ended. It sets no
// deadline of its own: the search's budget ends the search, and go test's
// -timeout ends a test that waits longer.
func waitFind(t *testing.T, h http.Handler, id string) api.FindStatus {
	t.Helper()
	for {
		r := serve(h, "GET", "/api/explore/sessions/"+id, "")
		var st struct {
			Find *api.FindStatus `json:"find"`
		}
		r.decode(t, &st)
		if r.status != http.StatusOK || st.Find == nil {
			t.Fatalf("GET the session: %d %s", r.status, r.body)
		}
		if st.Find.State != api.StateRunning {
			jsonkeys.Check(t, "session", r.body)
			return *st.Find
		}
		time.Sleep(5 * time.Millisecond)
	}
}
