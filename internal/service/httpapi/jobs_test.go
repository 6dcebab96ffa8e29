package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/service/api"
	"github.com/lockmarket/lockmarket/internal/service/exploresession"
	"github.com/lockmarket/lockmarket/internal/service/lab"
	rushrun "github.com/lockmarket/lockmarket/internal/service/rush"
	"github.com/lockmarket/lockmarket/internal/testsupport/jsonkeys"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/internal/timeline"
	"github.com/lockmarket/lockmarket/market"
)

// newJobsServer is a fixture's server with a rush and a lab that know the
// backend (the lab moves miniredis's clock), closed when the test ends.
func newJobsServer(t *testing.T, b *redistest.Backend) (*Server, *fixture) {
	t.Helper()
	f := newFixture(t, b)
	srv, err := New(withJobs(Config{Market: f.m}, b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	return srv, f
}

// withJobs returns cfg with the rush and the lab of the service on b.
func withJobs(cfg Config, b *redistest.Backend) Config {
	cfg.Rush = rushrun.New(b.Client, b.Mini != nil, cfg.Env.Redis.Mode, cfg.Logger)
	cfg.Lab = lab.New(b.Client, b.Mini, cfg.Logger)
	// A search's budget no machine's load runs out (the default, a
	// minute, ran out at a load of 60 on 2 cores under -race); the step
	// budget stays the default, whose message TestExploreLua reads.
	cfg.Explore = exploresession.New(exploresession.Config{FindBudget: 10 * time.Minute})
	return cfg
}

// waitForJob polls GET path until its state is not "running" (the job
// ends at its own bound: a rush at its duration, a search at its budget;
// the wait, at the test's deadline) and decodes it into v.
func waitForJob(t *testing.T, h http.Handler, path string, v any) {
	t.Helper()
	var r response
	redistest.WaitFor(t, path+" to end", func() bool {
		r = serve(h, "GET", path, "")
		var st struct {
			State string `json:"state"`
		}
		r.decode(t, &st)
		return st.State != api.StateRunning
	})
	r.decode(t, v)
	jsonkeys.Check(t, path, r.body)
}

func TestRushRefused(t *testing.T) {
	b := redistest.Mini(t)
	srv, f := newJobsServer(t, b)
	before := redistest.Snapshot(t, f.rdb)
	for _, tc := range []struct{ name, body string }{
		{"empty", `{}`},
		{"no duration", `{"buyers":50}`},
		{"no buyers", `{"duration_ms":10000}`},
		{"zero buyers", `{"buyers":0,"duration_ms":10000}`},
		{"too many buyers", `{"buyers":201,"duration_ms":10000}`},
		{"too many listers", `{"buyers":5,"listers":51,"duration_ms":10000}`},
		{"too short", `{"buyers":5,"duration_ms":999}`},
		{"too long", `{"buyers":5,"duration_ms":60001}`},
		{"no strategy", `{"buyers":5,"duration_ms":1000,"strategies":[]}`},
		{"unknown strategy", `{"buyers":5,"duration_ms":1000,"strategies":["optimistic"]}`},
		{"twice", `{"buyers":5,"duration_ms":1000,"strategies":["lua","lua"]}`},
		{"wrong type", `{"buyers":"5","duration_ms":1000}`},
		{"unknown field", `{"buyers":5,"duration_ms":1000,"rtts":5}`},
		{"negative round trip", `{"buyers":5,"duration_ms":1000,"rtt_ms":-1}`},
		{"round trip over a second", `{"buyers":5,"duration_ms":1000,"rtt_ms":1000.5}`},
		{"round trip not a number", `{"buyers":5,"duration_ms":1000,"rtt_ms":"2ms"}`},
	} {
		r := serve(srv.Handler(), "POST", "/api/rush", tc.body)
		if r.status != 400 || r.code() != CodeInvalidRequest {
			t.Errorf("%s: %d %s", tc.name, r.status, r.body)
		}
	}
	var st api.RushStatus
	serve(srv.Handler(), "GET", "/api/rush", "").decode(t, &st)
	if st.State != api.StateIdle || len(st.Strategies) != 0 {
		t.Errorf("before any rush: %+v", st)
	}
	if after := redistest.Snapshot(t, f.rdb); !maps.Equal(before, after) {
		t.Errorf("refused rushes changed Redis")
	}
	// One rush at a time.
	if r := serve(srv.Handler(), "POST", "/api/rush", `{"buyers":1,"duration_ms":60000,"strategies":["lua"]}`); r.status != http.StatusAccepted {
		t.Fatalf("first rush: %d %s", r.status, r.body)
	}
	if r := serve(srv.Handler(), "POST", "/api/rush", `{"buyers":5,"duration_ms":1000}`); r.status != 409 || r.code() != CodeBusy {
		t.Errorf("second rush: %d %s", r.status, r.body)
	}
	if r := serve(srv.Handler(), "DELETE", "/api/rush", ""); r.status != 200 {
		t.Errorf("cancel: %d %s", r.status, r.body)
	}
}

// TestRush runs a short rush under two strategies and checks its figures,
// that it used markets of its own (the demo market unchanged, nothing left
// behind), and that a rush can be cancelled.
func TestRush(t *testing.T) {
	redistest.SkipShort(t, redistest.NeedServer) // real time or real load: the full run has it
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		srv, f := newJobsServer(t, b)
		before := redistest.Snapshot(t, f.rdb)
		r := serve(srv.Handler(), "POST", "/api/rush", `{"buyers":8,"listers":2,"duration_ms":1000,"strategies":["watch","lua"],"rtt_ms":2.5}`)
		if r.status != http.StatusAccepted || r.header.Get("Location") != "/api/rush" {
			t.Fatalf("start: %d %s", r.status, r.body)
		}
		var st api.RushStatus
		waitForJob(t, srv.Handler(), "/api/rush", &st)
		if st.State != api.StateDone || st.Buyers != 8 || st.Listers != 2 || st.StrategyDurationMS != 500 || len(st.Strategies) != 2 {
			t.Fatalf("rush: %+v", st)
		}
		// The round trip added is one the clients see: the delay proxy
		// never delivers early.
		if st.RTTMS != 2.5 || st.MeasuredRTTMS < 2.5 {
			t.Errorf("round trip %v ms asked, %v ms measured", st.RTTMS, st.MeasuredRTTMS)
		}
		for _, s := range st.Strategies {
			if s.State != api.StateDone || s.Bought == 0 || s.Listed < s.Bought || s.WaitSamples != uint64(s.Bought) ||
				s.P99WaitMS < s.P50WaitMS || s.AuditViolations != 0 || s.Failures == nil || len(s.Series) == 0 ||
				!strings.HasPrefix(s.Market, "rush-"+st.ID+"-") {
				t.Errorf("%s: %+v", s.Strategy, s)
			}
			if s.Strategy == market.Lua && (s.Retries != 0 || s.LockWaits != 0) {
				t.Errorf("lua paid retries or lock waits: %+v", s)
			}
			if lost := s.Failures.ListingNotFound + s.Failures.PriceChanged; s.LostToAnotherBuyer != lost || lost > s.Failed {
				t.Errorf("%s: %d lost to another buyer, want %d of %d failed", s.Strategy, s.LostToAnotherBuyer, lost, s.Failed)
			}
		}
		// The figures are in /metrics too, as the page shows them.
		m := string(serve(srv.Handler(), "GET", "/metrics", "").body)
		for _, s := range st.Strategies {
			for _, want := range []string{
				fmt.Sprintf("lockmarket_rush_bought{strategy=%q} %d\n", s.Strategy, s.Bought),
				fmt.Sprintf("lockmarket_rush_lost_to_another_buyer{strategy=%q} %d\n", s.Strategy, s.LostToAnotherBuyer),
				fmt.Sprintf("lockmarket_rush_audit_violations{strategy=%q} 0\n", s.Strategy),
				fmt.Sprintf("lockmarket_rush_retries_per_purchase{strategy=%q} ", s.Strategy),
			} {
				if !strings.Contains(m, want) {
					t.Errorf("/metrics lacks %q", want)
				}
			}
		}
		if !strings.Contains(m, "lockmarket_rush_running 0\n") {
			t.Error("/metrics lacks lockmarket_rush_running 0")
		}
		if after := redistest.Snapshot(t, f.rdb); !maps.Equal(before, after) {
			t.Errorf("the rush changed or left keys: %d keys before, %d after", len(before), len(after))
		}

		// Cancelled: DELETE answers once it has stopped.
		r = serve(srv.Handler(), "POST", "/api/rush", `{"buyers":4,"duration_ms":60000,"strategies":["fine","coarse"]}`)
		if r.status != http.StatusAccepted {
			t.Fatalf("start: %d %s", r.status, r.body)
		}
		r = serve(srv.Handler(), "DELETE", "/api/rush", "")
		r.decode(t, &st)
		if r.status != 200 || st.State != api.StateCancelled || st.Strategies[1].State != api.StateCancelled {
			t.Errorf("cancel: %d %s", r.status, r.body)
		}
		if after := redistest.Snapshot(t, f.rdb); !maps.Equal(before, after) {
			t.Errorf("the cancelled rush left keys")
		}
	})
}

// TestCloseStopsRush checks that Close stops a running rush and waits for
// it.
func TestCloseStopsRush(t *testing.T) {
	b := redistest.Mini(t)
	srv, _ := newJobsServer(t, b)
	if r := serve(srv.Handler(), "POST", "/api/rush", `{"buyers":2,"duration_ms":60000}`); r.status != http.StatusAccepted {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	srv.Close()
	var st api.RushStatus
	serve(srv.Handler(), "GET", "/api/rush", "").decode(t, &st)
	if st.State != api.StateCancelled {
		t.Errorf("after Close: %s", st.State)
	}
	if r := serve(srv.Handler(), "POST", "/api/rush", `{"buyers":2,"duration_ms":1000}`); r.status != 503 {
		t.Errorf("a rush after Close: %d %s", r.status, r.body)
	}
}

func TestLabRefused(t *testing.T) {
	b := redistest.Mini(t)
	srv, _ := newJobsServer(t, b)
	for _, tc := range []struct{ name, body string }{
		{"empty", `{}`},
		{"unknown recipe", `{"recipe":"7"}`},
		{"both", `{"recipe":"6","fault":"pause","strategy":"fine"}`},
		{"other fault", `{"fault":"stall","strategy":"fine"}`},
		{"no strategy", `{"fault":"pause"}`},
		{"no fault", `{"strategy":"fine"}`},
		{"unknown strategy", `{"fault":"pause","strategy":"redlock"}`},
		{"wrong type", `{"recipe":6}`},
		{"unknown field", `{"recipe":"6","speed":1}`},
	} {
		r := serve(srv.Handler(), "POST", "/api/lab/runs", tc.body)
		if r.status != 400 || r.code() != CodeInvalidRequest {
			t.Errorf("%s: %d %s", tc.name, r.status, r.body)
		}
	}
	if r := serve(srv.Handler(), "GET", "/api/lab/runs/nope", ""); r.status != 404 || r.code() != CodeNotFound {
		t.Errorf("unknown run: %d %s", r.status, r.body)
	}
	var sc struct {
		Recipes []struct{ Recipe, Name string } `json:"recipes"`
		Faults  []struct {
			Fault      string   `json:"fault"`
			Strategies []string `json:"strategies"`
		} `json:"faults"`
	}
	serve(srv.Handler(), "GET", "/api/lab/scenarios", "").decode(t, &sc)
	if len(sc.Recipes) != 8 || sc.Recipes[5].Recipe != "6" || len(sc.Faults) != 1 || len(sc.Faults[0].Strategies) != 7 {
		t.Errorf("scenarios: %+v", sc)
	}
}

// TestLab runs a recipe and the pause fault in the lab: each comes back
// with its timeline and verdict, beside its fix, the same steps at the
// same virtual times in every run (they are schedules on the explorer's
// virtual clock, so a busy machine changes nothing of them).
func TestLab(t *testing.T) {
	t.Parallel() // services of its own
	redistest.Run(t, func(t *testing.T, b *redistest.Backend) {
		srv, f := newJobsServer(t, b)
		before := redistest.Snapshot(t, f.rdb)
		run := func(body string) api.LabRun {
			t.Helper()
			r := serve(srv.Handler(), "POST", "/api/lab/runs", body)
			var started api.LabRun
			r.decode(t, &started)
			if r.status != http.StatusAccepted || r.header.Get("Location") != "/api/lab/runs/"+started.ID {
				t.Fatalf("%s: %d %s", body, r.status, r.body)
			}
			var done api.LabRun
			waitForJob(t, srv.Handler(), "/api/lab/runs/"+started.ID, &done)
			if done.State != api.StateDone {
				t.Fatalf("%s: %+v", body, done)
			}
			return done
		}
		// same runs body twice and checks that its variants read alike.
		same := func(body string) api.LabRun {
			t.Helper()
			first, second := run(body), run(body)
			a, _ := json.Marshal(first.Runs)
			b, _ := json.Marshal(second.Runs)
			if !bytes.Equal(a, b) {
				t.Errorf("%s: two runs differ:\n%s\n%s", body, a, b)
			}
			for _, v := range first.Runs {
				if !v.VirtualClock {
					t.Errorf("%s: %s not on the virtual clock", body, v.Name)
				}
			}
			return first
		}
		got := same(`{"recipe":"6"}`)
		if len(got.Runs) != 2 || got.Runs[0].Name != "flawed" || got.Runs[1].Name != "fixed" {
			t.Fatalf("runs: %+v", got.Runs)
		}
		flawed, fixed := got.Runs[0], got.Runs[1]
		if flawed.Violations == 0 || !strings.Contains(flawed.Verdict, "The unsafe step: A commits after its lease") ||
			flawed.Timeline.Follow(timeline.Pattern{Client: "A", Kind: timeline.Commit, Violation: true}) >= 0 {
			t.Errorf("flawed: %d violations, %q", flawed.Violations, flawed.Verdict)
		}
		if fixed.Violations != 0 || !strings.HasPrefix(fixed.Verdict, "Fixed by") ||
			fixed.Timeline.Follow(timeline.Pattern{Client: "A", Kind: timeline.CommitRefused}) >= 0 {
			t.Errorf("fixed: %d violations, %q", fixed.Violations, fixed.Verdict)
		}
		if after := redistest.Snapshot(t, f.rdb); !maps.Equal(before, after) {
			t.Errorf("the lab run changed or left keys")
		}
		m := string(serve(srv.Handler(), "GET", "/metrics", "").body)
		for _, want := range []string{`lockmarket_lab_variants_total{variant="flawed",verdict="violation"} 2` + "\n",
			`lockmarket_lab_variants_total{variant="fixed",verdict="clean"} 2` + "\n", "lockmarket_lab_running 0\n"} {
			if !strings.Contains(m, want) {
				t.Errorf("/metrics lacks %q", want)
			}
		}
		if b.Real() {
			return // the pause runs on an embedded server of its own: once is enough
		}
		got = same(`{"fault":"pause","strategy":"fine"}`)
		if len(got.Runs) != 2 || got.Runs[1].Name != "fine+fencing" || got.Runs[0].Violations == 0 || got.Runs[1].Violations != 0 {
			t.Errorf("pause/fine: %+v", got.Runs)
		}
		got = run(`{"fault":"pause","strategy":"lua"}`)
		if len(got.Runs) != 1 || got.Runs[0].Violations != 0 {
			t.Errorf("pause/lua: %+v", got.Runs)
		}
		doc, _ := json.Marshal(got)
		jsonkeys.Check(t, "lab run", doc)
	})
}
