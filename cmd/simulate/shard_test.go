package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

func TestShardFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		bad  string // part of the usage message; "" for valid flags
	}{
		{[]string{"-recipe", "6", "-fixed", "-shard", "0/4"}, ""},
		{[]string{"-recipe", "6", "-fixed", "-shard", "3/4", "-workers", "2"}, ""},
		{[]string{"-recipe", "6", "-shard", "4/4"}, `-shard "4/4"`},
		{[]string{"-recipe", "6", "-shard", "0/1"}, `-shard "0/1"`},
		{[]string{"-recipe", "6", "-shard", "-1/2"}, `-shard "-1/2"`},
		{[]string{"-recipe", "6", "-shard", "half"}, `-shard "half"`},
		{[]string{"-recipe", "6", "-shard", "1/2", "-mode", "random"},
			"-shard goes with -mode exhaustive"},
	} {
		var stderr bytes.Buffer
		_, err := parseExploreFlags(tc.args, &stderr)
		if tc.bad == "" {
			if err != nil {
				t.Errorf("%q: %v: %s", tc.args, err, stderr.String())
			}
			continue
		}
		if !errors.Is(err, output.ErrUsage) || !strings.Contains(stderr.String(), tc.bad) {
			t.Errorf("%q: err %v, stderr %q; want a usage error mentioning %q",
				tc.args, err, stderr.String(), tc.bad)
		}
	}
}

// shardDoc is what the tests read of a -format json document.
type shardDoc struct {
	Schedules  int     `json:"schedules"`
	Pruned     int     `json:"pruned"`
	Exhaustive bool    `json:"exhaustive"`
	Coverage   float64 `json:"coverage"`
	Violations []struct {
		Property   string `json:"property"`
		Reproduced bool   `json:"reproduced"`
	} `json:"violations"`
	Shard *struct {
		Index       int    `json:"index"`
		Count       int    `json:"count"`
		Fingerprint string `json:"fingerprint"`
		Commit      string `json:"commit"`
	} `json:"shard"`
	MergedShards   int  `json:"merged_shards"`
	WholeCount     bool `json:"whole_count"`
	ShardSchedules int  `json:"shard_schedules"`
}

// exploreJSON runs simulate explore with args and -format json, writes
// its document into dir/name, and returns it with the run's error.
func exploreJSON(t *testing.T, dir, name string, args ...string) (string, shardDoc, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append(append([]string{"explore"}, args...), "-format", "json")
	err := run(context.Background(), args, &stdout, &stderr)
	var doc shardDoc
	if jerr := json.Unmarshal(stdout.Bytes(), &doc); jerr != nil {
		t.Fatalf("%q: %v (%v)\n%s", args, jerr, err, stderr.String())
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, stdout.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p, doc, err
}

// TestExploreShardsMerge: a fixed recipe split 2, 3 and 4 ways, each
// shard exhaustive on its part, merges into an exhaustive search with no
// violation (exit 0) and the whole search's counts exactly (recounted
// over what the shards explored); a flawed one split 2 ways merges into
// its violation, replayed (exit 1), with the whole search's counts too.
func TestExploreShardsMerge(t *testing.T) {
	t.Parallel() // a server and a temporary directory of its own
	url := "redis://" + redistest.Real(t).Addr()
	dir := t.TempDir()
	fixed := []string{"-redis", url, "-recipe", "2", "-fixed", "-faults", "crash", "-workers", "1"}
	_, whole, err := exploreJSON(t, dir, "whole.json", fixed...)
	if err != nil || !whole.Exhaustive || whole.Shard != nil {
		t.Fatalf("the whole search: %v, %+v", err, whole)
	}
	byCount := map[int][]string{} // the shards' files, by their count
	for _, n := range []int{2, 3, 4} {
		var files []string
		for i := range n {
			f, doc, err := exploreJSON(t, dir, fmt.Sprintf("fixed-%d-%d.json", n, i),
				append(fixed, "-shard", fmt.Sprintf("%d/%d", i, n))...)
			if err != nil || !doc.Exhaustive || doc.Shard == nil || doc.Shard.Index != i ||
				doc.Shard.Count != n || doc.Shard.Fingerprint == "" || doc.Shard.Commit == "" {
				t.Fatalf("shard %d/%d: %v, %+v", i, n, err, doc)
			}
			files = append(files, f)
		}
		_, merged, err := exploreJSON(t, dir, fmt.Sprintf("merged-%d.json", n),
			append([]string{"-merge"}, files...)...)
		if err != nil || !merged.Exhaustive || merged.Coverage != 1 || merged.MergedShards != n ||
			!merged.WholeCount || merged.Schedules != whole.Schedules ||
			merged.Pruned != whole.Pruned || merged.ShardSchedules < whole.Schedules ||
			len(merged.Violations) != 0 {
			t.Errorf("%d shards merged: %v, %+v; the whole search %d schedules (+%d cut)",
				n, err, merged, whole.Schedules, whole.Pruned)
		}
		byCount[n] = files
	}

	flawed := []string{"-redis", url, "-recipe", "1", "-faults", "none", "-workers", "1"}
	_, wholeFlawed, err := exploreJSON(t, dir, "whole-flawed.json", flawed...)
	if !errors.Is(err, errExploreFound) {
		t.Fatalf("the whole search of recipe 1: %v", err)
	}
	var broken []string
	for i := range 2 {
		f, _, err := exploreJSON(t, dir, fmt.Sprintf("flawed-%d.json", i),
			append(flawed, "-shard", fmt.Sprintf("%d/2", i))...)
		if err != nil && !errors.Is(err, errExploreFound) {
			t.Fatalf("shard %d/2 of recipe 1: %v", i, err)
		}
		broken = append(broken, f)
	}
	_, merged, err := exploreJSON(t, dir, "merged-flawed.json",
		append([]string{"-merge"}, broken...)...)
	if !errors.Is(err, errExploreFound) || exitCode(err) != 1 || len(merged.Violations) != 1 ||
		merged.Violations[0].Property != "mutual_exclusion" || !merged.Violations[0].Reproduced ||
		merged.Schedules != wholeFlawed.Schedules || merged.Pruned != wholeFlawed.Pruned {
		t.Errorf("merged recipe 1: %v (exit %d), %+v; the whole search %+v",
			err, exitCode(err), merged, wholeFlawed)
	}

	mergeRefusals(t, dir, url, byCount[3], broken)
}

// mergeRefusals checks that -merge refuses, naming the file, what is not every
// shard of one search once.
func mergeRefusals(t *testing.T, dir, url string, fixed, flawed []string) {
	t.Helper()
	other, _, err := exploreJSON(t, dir, "other.json", "-redis", url, "-recipe", "2", "-fixed",
		"-faults", "crash", "-clients", "3", "-workers", "1", "-shard", "1/3")
	if err != nil {
		t.Fatalf("a shard with 3 clients: %v", err)
	}
	b, err := os.ReadFile(fixed[2])
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	shard := doc["shard"].(map[string]any)
	shard["explored"].(map[string]any)["data"] = "AAAA" // not DEFLATE's
	b, _ = json.Marshal(doc)
	unread := filepath.Join(dir, "unread.json")
	os.WriteFile(unread, b, 0o644)
	shard["commit"] = "v0.0.0-another"
	b, _ = json.Marshal(doc)
	commit := filepath.Join(dir, "commit.json")
	os.WriteFile(commit, b, 0o644)
	garbage := filepath.Join(dir, "garbage.json")
	os.WriteFile(garbage, []byte("schedules: 3\n"), 0o644)
	whole := filepath.Join(dir, "whole.json")
	for _, tc := range []struct {
		name  string
		files []string
		want  string
	}{
		{"missing", fixed[:2], "shard 2/3 missing"},
		{"twice", []string{fixed[0], fixed[1], fixed[1], fixed[2]},
			fixed[1] + ": shard 1/3 given twice"},
		{"other target", []string{fixed[0], flawed[1]}, flawed[1] + ": a shard of 2"},
		{"other options", []string{fixed[0], other, fixed[2]},
			other + ": a shard of another search"},
		{"other commit", []string{fixed[0], fixed[1], commit},
			commit + ": written by v0.0.0-another"},
		{"not a shard", []string{whole, fixed[1]}, whole + ": not a shard"},
		{"a record that does not read", []string{fixed[0], fixed[1], unread},
			unread + ": its record does not read"},
		{"not JSON", []string{fixed[0], garbage}, garbage + ": not an explorer's JSON result"},
		{"no file", []string{filepath.Join(dir, "none.json")}, "none.json: open"},
		{"no files", nil, "give the shards' JSON files"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"explore", "-merge"}, tc.files...),
			&stdout, &stderr)
		msg := strings.Join(strings.Fields(stderr.String()), " ") // unwrapped
		if exitCode(err) != 2 || !strings.Contains(msg, tc.want) || stdout.Len() > 0 {
			t.Errorf("%s: exit %d, stderr %q, stdout %q; want exit 2 and %q",
				tc.name, exitCode(err), stderr.String(), stdout.String(), tc.want)
		}
	}
}
