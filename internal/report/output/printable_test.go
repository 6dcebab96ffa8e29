package output

import (
	"bytes"
	"testing"
)

// TestPrintable: control and unprintable characters are escaped, the
// rest kept, and a cut says the length.
func TestPrintable(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"plain — µs", 0, "plain — µs"},
		{"\x1b[2Jok\r\n", 0, `\x1b[2Jok\r\n`},
		{"a\u202eb", 0, `a\u202eb`},
		{"bad\xffbyte", 0, `bad\xffbyte`},
		{`back\slash`, 0, `back\slash`},
		{"abcdef", 3, "abc…(6 bytes)"},
	} {
		if got := Printable(tc.in, tc.max); got != tc.want {
			t.Errorf("Printable(%q, %d) = %q; want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

// TestPrintableWriter: newlines and tabs pass, control characters are
// escaped, and a character split across writes arrives whole.
func TestPrintableWriter(t *testing.T) {
	var b bytes.Buffer
	w := PrintableWriter(&b)
	for _, s := range []string{"a\tb\n", "\x1b[2J", "\xce", "\xbcs\r\n"} {
		if n, err := w.Write([]byte(s)); err != nil || n != len(s) {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if want := "a\tb\n\\x1b[2Jμs\\r\n"; b.String() != want {
		t.Errorf("wrote %q; want %q", b.String(), want)
	}
}
