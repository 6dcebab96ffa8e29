package view_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/view"
)

// A result written for a person: what was explored and how far the
// search went, then what it found. A command adds lines of its own
// between the two, here the server it ran on.
func ExampleWriteFindings() {
	m := action.DefaultModel()
	m.Clients = 2
	res := &result.Result{
		Target:     "my mutex",
		About:      "SET NX PX, released by a compare-and-delete script",
		Model:      m.Resolve(),
		Checked:    []string{result.MutualExclusion, result.Liveness},
		Mode:       "exhaustive",
		Schedules:  1200,
		Held:       1180,
		Pruned:     300,
		Coverage:   1,
		Exhaustive: true,
		Elapsed:    3 * time.Second,
	}
	if err := view.WriteSummary(os.Stdout, res); err != nil {
		fmt.Println(err)
	}
	fmt.Println("redis: redis-server 7.2.4")
	if err := view.WriteFindings(os.Stdout, res, false); err != nil {
		fmt.Println(err)
	}
	// Output:
	// explore: my mutex — SET NX PX, released by a compare-and-delete script
	// model: 2 clients, 1 critical section(s) each, 2 attempt(s) at the lock per section, at most 10
	// commands per client, at most 1 fault(s) per schedule of pause-short, pause-long, pause-forever,
	// crash, at most 3 advance(s) of the clock; lease 10s, retry 10ms, pauses short 5s / long 15s /
	// forever (virtual time)
	// checked: mutual_exclusion, liveness
	// search: exhaustive mode, 1200 schedules (300 more cut by the reduction), 3.0 s, 500 schedules/s;
	// coverage 100% of the tree; every schedule searched: yes, within the bounds
	// activity: a client held the lock in 1180 of 1200 schedules
	// redis: redis-server 7.2.4
	//
	// No violation of mutual_exclusion, liveness.
	//
	// Time is virtual and dilated: every duration the code under test and the server see (the lease, the
	// retry wait, each shortening of the leases when the clock advances, the clients' clock) is the
	// virtual one times 1000000, so a stall of the machine of S moves a lease by S/1000000 of virtual
	// time. Constants in the code under test (a 1 ms backoff) shrink by as much. Times shown are virtual.
}

// A document of a command of your own: the result's keys, then the
// command's. Printed here are its keys, in order.
func Example_resultJSON() {
	res := &result.Result{Target: "my mutex", Model: action.DefaultModel(), Mode: "exhaustive"}
	b, err := json.Marshal(struct {
		result.ResultJSON
		Host string `json:"host"`
	}{res.JSON(), "ci-1"})
	if err != nil {
		fmt.Println(err)
		return
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.Token() // {
	for i := 1; dec.More(); i++ {
		key, _ := dec.Token()
		var value json.RawMessage
		dec.Decode(&value)
		sep := " "
		if i%5 == 0 {
			sep = "\n"
		}
		fmt.Print(key, sep)
	}
	// Output:
	// target about mode model checked
	// schedules pruned coverage diverged schedules_with_holder
	// reruns exhaustive stopped elapsed_s schedules_per_s
	// dilation violations counterexample unsteady note
	// host
}

// TestResultJSONEmbedded: a document that embeds a result's JSON has the
// result's keys, in the same order and the same bytes as its
// MarshalJSON, followed by the document's own.
func TestResultJSONEmbedded(t *testing.T) {
	m := action.DefaultModel()
	m.Clients, m.TTLs = 3, []time.Duration{2 * time.Second, 3 * time.Second}
	found := result.Counterexample{
		Violation: result.Violation{
			Property: result.Resource,
			Message:  "lost an update",
			Step:     1,
		},
		Actions: []action.Action{{Kind: action.Start, Client: "A"}},
		Steps: []action.Step{
			{Action: action.Action{Kind: action.Start, Client: "A"}, Text: "A starts"},
		},
		Reproduced: true,
		Server:     "7.0.15",
	}
	for _, res := range []*result.Result{
		{Target: "nothing " +
			"found", Model: m, Mode: "exhaustive", Schedules: 12, Coverage: 1, Exhaustive: true},
		{Target: "found", Model: m, Checked: []string{result.Resource}, Mode: "random", Seed: 7,
			Schedules: 40,
			Stopped:   result.StoppedBudget, Budget: 20 * time.Second,
			Violations: []result.Counterexample{found}},
	} {
		own, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := json.Marshal(struct {
			result.ResultJSON
			Host string `json:"host"`
		}{res.JSON(), "h"})
		if err != nil {
			t.Fatal(err)
		}
		want := append(own[:len(own)-1:len(own)-1], `,"host":"h"}`...)
		if !bytes.Equal(doc, want) {
			t.Errorf("%s: embedded\n%s\nwant\n%s", res.Target, doc, want)
		}
	}
}
