package jsonkeys

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestProblems(t *testing.T) {
	tests := []struct {
		name     string
		doc      string
		keys     int
		problems []string
	}{
		{"snake case", `{"a":1,"b_c":{"d2":[{"e_ms":1.5}]}}`, 4, nil},
		{"capitalised key", `{"Attempted":1}`, 1, []string{`: key "Attempted" is not snake_case`}},
		{"nested key", `{"rows":[{"ok":1},{"lockLost":2}]}`, 3, []string{`.rows[1]: key "lockLost" is not snake_case`}},
		{"leading digit", `{"9a":0}`, 1, []string{`: key "9a" is not snake_case`}},
		{"duration value", `{"lock_ttl":"200ms"}`, 1, []string{`.lock_ttl: value "200ms" is a Go duration string`}},
		{"duration in array", `{"x":["1m30s"]}`, 1, []string{`.x[0]: value "1m30s" is a Go duration string`}},
		{"number strings and words", `{"a":"0","b":"1.5","c":"5x5","d":"watch","e":"<200"}`, 5, nil},
		{"no keys", `[1,2]`, 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v any
			if err := json.Unmarshal([]byte(tc.doc), &v); err != nil {
				t.Fatal(err)
			}
			keys, problems := Problems(v)
			if keys != tc.keys || !slices.Equal(problems, tc.problems) {
				t.Errorf("Problems = %d, %q; want %d, %q", keys, problems, tc.keys, tc.problems)
			}
		})
	}
}

func TestIsDuration(t *testing.T) {
	for s, want := range map[string]bool{"1.5ms": true, "2s": true, "1h0m0s": true, "300µs": true,
		"0": false, "12": false, "-3.5": false, "ms": false, "14 ms": false, "fine": false} {
		if got := IsDuration(s); got != want {
			t.Errorf("IsDuration(%q) = %v, want %v", s, got, want)
		}
	}
}
