package output

import (
	"encoding/json"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	tests := []struct {
		name string
		bi   debug.BuildInfo
		want string
	}{
		{"tagged", debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3"},
		{"pseudo-version", debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260101000000-0123456789ab+dirty"}},
			"v0.0.0-20260101000000-0123456789ab+dirty"},
		{"devel with revision", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "false"}}}, "devel 0123456789ab"},
		{"devel, modified", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}}, "devel abc+dirty"},
		{"devel without VCS", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "devel (built without VCS information)"},
		{"no version", debug.BuildInfo{}, "devel (built without VCS information)"},
		{"without VCS, the commit given to the linker", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			"devel 0123456789ab"},
		{"the VCS's revision before the linker's", debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}}}, "devel abc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.name, "linker") {
				Commit = "0123456789ab"
				defer func() { Commit = "" }()
			}
			if got := version(&tc.bi); got != tc.want {
				t.Errorf("version = %q, want %q", got, tc.want)
			}
		})
	}
	if line := VersionLine("simulate"); !strings.HasPrefix(line, "simulate ") || !strings.Contains(line, "go1") {
		t.Errorf("VersionLine = %q", line)
	}
}

func TestWrap(t *testing.T) {
	tests := []struct {
		text  string
		width int
		want  string
	}{
		{"a bb ccc dddd", 6, "a bb\nccc\ndddd"},
		{"a bb ccc", 8, "a bb ccc"},
		{"kept\nbreaks here", 20, "kept\nbreaks here"},
		{"averyverylongword b", 4, "averyverylongword\nb"},
		{"µµ µµ", 5, "µµ µµ"},
		{"", 10, ""},
	}
	for _, tc := range tests {
		if got := Wrap(tc.text, tc.width); got != tc.want {
			t.Errorf("Wrap(%q, %d) = %q, want %q", tc.text, tc.width, got, tc.want)
		}
	}
}

func TestThousands(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 12: "12", 1234: "1,234", 123456: "123,456", 1234567: "1,234,567", -4321: "-4,321"} {
		if got := Thousands(in); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestWidest(t *testing.T) {
	if got := Widest("ab\n│ µs │\nabcd\n"); got != 6 {
		t.Errorf("Widest = %d, want 6", got)
	}
}

// TestEnvShape: the block a document embeds gives it top-level "redis"
// and "machine" keys.
func TestEnvShape(t *testing.T) {
	doc := struct {
		Env
		Rows []int `json:"rows"`
	}{Env: NewEnv("redis-server", "7.0.15"), Rows: []int{}}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]map[string]any
	json.Unmarshal(data, &got)
	if got["redis"]["mode"] != "redis-server" || got["redis"]["version"] != "7.0.15" {
		t.Errorf("redis block = %v", got["redis"])
	}
	if got["machine"]["cpus"].(float64) < 1 || got["machine"]["go_version"] == "" || got["machine"]["program"] == "" {
		t.Errorf("machine block = %v", got["machine"])
	}
}

func ExampleWrap() {
	fmt.Println(Wrap("In parentheses: the book's figures for the same cell", 20))
	// Output:
	// In parentheses: the
	// book's figures for
	// the same cell
}
