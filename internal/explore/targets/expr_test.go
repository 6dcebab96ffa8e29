package targets

import (
	"strings"
	"testing"
)

// TestExprEval: a placeholder's arithmetic adds and subtracts whole
// numbers, and says why it cannot: a nil, a value that is no whole
// number, a result past int64.
func TestExprEval(t *testing.T) {
	known := append([]string{"v"}, builtinPlaceholders...)
	vars := map[string]value{
		phNowMS: {s: "1700000000000"}, phTTL: {s: "10000"}, "v": {s: "9223372036854775807"},
	}
	for _, tc := range []struct {
		expr, want, err string
		vars            map[string]value
	}{
		{expr: "now_ms+ttl", want: "1700000010000"},
		{expr: "now_ms-ttl-1", want: "1699999989999"},
		{expr: "ttl-now_ms", want: "-1699999990000"},
		{expr: "ttl+5-5", want: "10000"},
		{expr: "v+1", err: "past the 64-bit integers"},
		{expr: "0-v-2", err: "past the 64-bit integers"},
		{expr: "v-1", want: "9223372036854775806"},
		{expr: "v+1", vars: map[string]value{"v": {null: true}}, err: "${v} is nil"},
		{expr: "v+1", vars: map[string]value{}, err: "${v} is nil"},
		{expr: "v+1", vars: map[string]value{"v": {s: "OK"}}, err: `${v} is "OK", not a whole`},
		{expr: "v+1", vars: map[string]value{"v": {s: "1.5"}}, err: "not a whole number"},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			e, err := parseExpr("f", tc.expr, known)
			if err != nil {
				t.Fatal(err)
			}
			vs := vars
			if tc.vars != nil {
				vs = tc.vars
			}
			o := &op{name: "release", steps: []*opStep{{cmd: []tmpl{
				{raw: "GET"}, {raw: "${" + tc.expr + "}", parts: []tmplPart{
					{name: tc.expr, expr: e}}},
			}}}}
			err = o.evalExprs(0, vs)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) ||
					!strings.HasPrefix(err.Error(), "ops.release.steps[0] (GET): ${"+tc.expr+"}: ") {
					t.Errorf("err %v; want one naming the step and %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case vs[tc.expr].s != tc.want:
				t.Errorf("%s = %q; want %s", tc.expr, vs[tc.expr].s, tc.want)
			}
		})
	}
}
