package api

import "github.com/lockmarket/lockmarket/internal/timeline"

// LabRequest is the body of POST /api/lab/runs: a recipe of the gallery,
// or a fault and a strategy.
type LabRequest struct {
	Recipe   *string `json:"recipe"`
	Fault    *string `json:"fault"`
	Strategy *string `json:"strategy"`
}

// LabScenarios is the answer of GET /api/lab/scenarios: what the lab can
// run.
type LabScenarios struct {
	Faults  []LabFault  `json:"faults"`
	Recipes []LabRecipe `json:"recipes"`
}

// LabRecipe is a recipe of the gallery the lab runs, flawed then fixed.
type LabRecipe struct {
	// Recipe is its ID, the one a LabRequest names; Name the rest of its
	// title.
	Recipe      string `json:"recipe"`
	Name        string `json:"name"`
	Fault       string `json:"fault"`
	Consequence string `json:"consequence"`
	FixedBy     string `json:"fixed_by"`
}

// LabFault is a fault the lab injects, and the strategies it runs under;
// Available is false when the server cannot run it. The pause runs on an
// embedded server of its own, so the service can always run it.
type LabFault struct {
	Fault       string   `json:"fault"`
	Description string   `json:"description"`
	Strategies  []string `json:"strategies"`
	Available   bool     `json:"available"`
}

// LabRun is the answer of POST /api/lab/runs and GET /api/lab/runs/:id.
type LabRun struct {
	ID    string `json:"id"`
	State string `json:"state"`
	// Kind is "recipe" or "fault": which of Recipe, or Fault and
	// Strategy, the run was asked for.
	Kind     string `json:"kind"`
	Recipe   string `json:"recipe,omitempty"`
	Fault    string `json:"fault,omitempty"`
	Strategy string `json:"strategy,omitempty"`
	// Description says what is injected, in words.
	Description string `json:"description"`
	// Runs are the scenario and then its fix (none when the strategy is
	// already safe), each with its timeline once done.
	Runs      []LabVariant `json:"runs"`
	ElapsedMS float64      `json:"elapsed_ms"`
	Error     string       `json:"error,omitempty"`
}

// LabVariant is one variant of a lab run: the flawed or fixed recipe, or
// a strategy under the fault.
type LabVariant struct {
	Name  string `json:"name"`
	State string `json:"state"`
	// Timeline is every event recorded; Steps the same read step by step
	// (timeline.Steps: no commands but those on a lock, each command with
	// its reply, repeats counted), as the page draws it.
	Timeline   *timeline.Timeline `json:"timeline,omitempty"`
	Steps      []LabStep          `json:"steps,omitempty"`
	Verdict    string             `json:"verdict,omitempty"`
	Violations int                `json:"violations"`
	// VirtualClock is set when the variant ran as a schedule on the
	// explorer's virtual clock: its times are virtual, the same in every
	// run; otherwise they are the server's real time.
	VirtualClock bool `json:"virtual_clock"`
}

// LabStep is a timeline.Step as JSON.
type LabStep struct {
	Seq       int           `json:"seq"`
	Client    string        `json:"client"`
	AtMS      float64       `json:"at_ms"`
	Kind      timeline.Kind `json:"kind"`
	Text      string        `json:"text"`
	Times     int           `json:"times"`
	Violation string        `json:"violation,omitempty"`
}
