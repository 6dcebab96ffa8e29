package history

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestAnomalies(t *testing.T) {
	tests := []struct {
		name  string
		a     Anomalies
		total int
		json  string
	}{
		{"none", Anomalies{}, 0,
			`{"not_linearizable":0,"sold_twice":0,"lost_sales":0,"funds_mismatch":0}`},
		{"some", Anomalies{SoldTwice: 2, FundsMismatch: 3}, 5,
			`{"not_linearizable":0,"sold_twice":2,"lost_sales":0,"funds_mismatch":3}`},
		{"every kind", Anomalies{1, 2, 3, 4}, 10,
			`{"not_linearizable":1,"sold_twice":2,"lost_sales":3,"funds_mismatch":4}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.a.Total(); got != tt.total {
				t.Errorf("Total = %d, want %d", got, tt.total)
			}
			b, err := json.Marshal(tt.a)
			if err != nil || string(b) != tt.json {
				t.Errorf("json = %s, %v; want %s", b, err, tt.json)
			}
			// Embedded in a struct, as faults.Result holds it.
			b, err = json.Marshal(struct {
				History Anomalies `json:"history"`
			}{tt.a})
			if want := `{"history":` + tt.json + `}`; err != nil || string(b) != want {
				t.Errorf("in a struct: %s, %v; want %s", b, err, want)
			}
			var back Anomalies
			if err := json.Unmarshal([]byte(tt.json), &back); err != nil || back != tt.a {
				t.Errorf("read back: %v, %v; want %v", back, err, tt.a)
			}
			var sum Anomalies
			sum.Add(tt.a)
			sum.Add(tt.a)
			if sum.Total() != 2*tt.total {
				t.Errorf("twice added: %v, want total %d", sum, 2*tt.total)
			}
		})
	}
}

func TestAnomaliesUnmarshalErrors(t *testing.T) {
	for _, in := range []string{`{"sold_thrice":1}`, `{"sold_twice":"1"}`, `[1,2]`} {
		a := Anomalies{LostSales: 7}
		if err := json.Unmarshal([]byte(in), &a); err == nil || a != (Anomalies{LostSales: 7}) {
			t.Errorf("%s: %v, %v; want an error and a unchanged", in, a, err)
		}
	}
	a := Anomalies{LostSales: 7}
	if err := json.Unmarshal([]byte(`{"sold_twice":1}`), &a); err != nil || a != (Anomalies{SoldTwice: 1}) {
		t.Errorf("a kind left out: %v, %v; want it zero", a, err)
	}
}

func TestAnomalyString(t *testing.T) {
	seen := map[string]bool{}
	for a := range numAnomalies {
		s := a.String()
		if s == "" || seen[s] {
			t.Errorf("kind %d: name %q empty or repeated", int(a), s)
		}
		seen[s] = true
	}
	if got := Anomaly(numAnomalies).String(); got != "anomaly(4)" {
		t.Errorf("out of range: %q", got)
	}
}

func TestFoundCountsAndDescribes(t *testing.T) {
	var r Report
	for i := range 25 {
		r.found(FundsMismatch, 1, "user u%d", i)
	}
	r.found(SoldTwice, 3, "item x bought 4 times")
	if r.Anomalies[FundsMismatch] != 25 || r.Anomalies[SoldTwice] != 3 || r.Anomalies.Total() != 28 {
		t.Errorf("counts %v", r.Anomalies)
	}
	if len(r.Details) != 20 || r.Details[0] != "user u0" {
		t.Errorf("details: %d, first %q; want the first 20", len(r.Details), r.Details[0])
	}
}

func ExampleAnomalies() {
	var sum Anomalies
	sum.Add(Anomalies{SoldTwice: 1})
	sum.Add(Anomalies{SoldTwice: 1, FundsMismatch: 2})
	b, _ := json.Marshal(sum)
	fmt.Println(sum[SoldTwice], sum.Total())
	fmt.Println(string(b))
	// Output:
	// 2 4
	// {"not_linearizable":0,"sold_twice":2,"lost_sales":0,"funds_mismatch":2}
}
