package sched

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestScanAsRegexp: the hand-written scans of a state's text (scan.go)
// replace exactly what the regular expressions they stand for would,
// on chosen texts and on random ones made of the characters that matter.
func TestScanAsRegexp(t *testing.T) {
	const uuid = "0f8fad5b-d9cb-469f-a165-70867728950e"
	mark := func(s string) string { return "<" + s + ">" }
	for _, tc := range []struct {
		name string
		re   *regexp.Regexp
		at   func(string, int) int
	}{
		{"token", regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), tokenAt},
		{"big number", regexp.MustCompile(`\b[0-9]{7,}\b`), bigNumberAt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			texts := []string{
				"", "x", uuid, "SET lock " + uuid + " PX 30000000 NX -> OK|",
				uuid + uuid, "a" + uuid + "z", uuid[:35], strings.ToUpper(uuid),
				"1234567", "123456", "x1234567", "1234567x", "_1234567", "1234567 89012345",
				"[1234567 2999999]", "12345678.5", "é1234567é", "-1234567-",
			}
			r := rand.New(rand.NewPCG(1, 2))
			const alphabet = "0123456789abcdefg-x _"
			for range 3000 {
				b := make([]byte, r.IntN(80))
				for i := range b {
					b[i] = alphabet[r.IntN(len(alphabet))]
				}
				if r.IntN(4) == 0 {
					at := r.IntN(len(b) + 1)
					b = append(b[:at:at], append([]byte(uuid), b[at:]...)...)
				}
				texts = append(texts, string(b))
			}
			matched := 0
			for _, text := range texts {
				want := tc.re.ReplaceAllStringFunc(text, mark)
				got := replaceEach(text, tc.at, mark)
				if got != want {
					t.Fatalf("%q: got %q, want %q", text, got, want)
				}
				if got != text {
					matched++
				}
			}
			if matched < 20 {
				t.Errorf("only %d of %d texts had a match: the test shows little", matched, len(texts))
			}
		})
	}
}
