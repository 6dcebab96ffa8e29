// Package jsonkeys checks a printed JSON document against the output
// schema (package output): every key, at any depth, is snake_case, and no
// value is a Go duration string such as "1.5ms" (a duration is a number
// whose key carries the unit).
package jsonkeys

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// keyStyle is snake_case.
var keyStyle = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Problems walks a decoded JSON value and describes, one per line, each key
// that is not snake_case and each string that is a Go duration. Paths are
// written as in jq (.rows[0].book). It also returns the number of keys
// seen.
func Problems(v any) (keys int, problems []string) {
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				keys++
				if !keyStyle.MatchString(k) {
					problems = append(problems, fmt.Sprintf("%s: key %q is not snake_case", path, k))
				}
				walk(path+"."+k, v[k])
			}
		case []any:
			for i, e := range v {
				walk(fmt.Sprintf("%s[%d]", path, i), e)
			}
		case string:
			if IsDuration(v) {
				problems = append(problems, fmt.Sprintf("%s: value %q is a Go duration string", path, v))
			}
		}
	}
	walk("", v)
	return keys, problems
}

// IsDuration reports whether s is a Go duration string with a unit
// ("1.5ms", "2m0s"); a bare number is not.
func IsDuration(s string) bool {
	s = strings.TrimSpace(s)
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return false
	}
	_, err := time.ParseDuration(s)
	return err == nil
}

// Check fails tb unless data is one JSON value (object or array) with at
// least one key, all of whose keys are snake_case and none of whose values
// is a duration string. name says which document it is.
func Check(tb testing.TB, name string, data []byte) {
	tb.Helper()
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		tb.Errorf("%s: not JSON: %v\n%s", name, err, data)
		return
	}
	keys, problems := Problems(v)
	if keys == 0 {
		tb.Errorf("%s: no key to check in %s", name, data)
	}
	for _, p := range problems {
		tb.Errorf("%s: %s", name, p)
	}
}

// CheckLines runs Check on each non-empty line of data (JSON lines, such
// as a JSON log) and returns how many lines it checked.
func CheckLines(tb testing.TB, name string, data []byte) int {
	tb.Helper()
	n := 0
	for line := range bytes.Lines(data) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		n++
		Check(tb, fmt.Sprintf("%s line %d", name, n), line)
	}
	return n
}
