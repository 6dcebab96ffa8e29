package docs_test

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// yamlDocs reads the YAML documents of a file under docs/shards.
func yamlDocs(t *testing.T, name string) []map[string]any {
	t.Helper()
	f, err := os.Open("shards/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := yaml.NewDecoder(f)
	var docs []map[string]any
	for {
		var d map[string]any
		err := dec.Decode(&d)
		if err != nil && err.Error() == "EOF" {
			return docs
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		docs = append(docs, d)
	}
}

// at walks a parsed YAML document down path (keys, and indexes of lists),
// failing the test where it ends early.
func at(t *testing.T, where string, v any, path ...any) any {
	t.Helper()
	for i, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok || m[k] == nil {
				t.Fatalf("%s: no %v", where, path[:i+1])
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("%s: no %v", where, path[:i+1])
			}
			v = l[k]
		}
	}
	return v
}

// shardRE finds a shard command: the target's flags, then -shard INDEX/N.
var shardRE = regexp.MustCompile(
	`simulate explore ((?:-[^\n]*?)) (?:\\\n\s*)?-shard "?([^/"]+)/(\d+)"?`)

// shardCommand reads a shard command in script: its target's flags (one
// space between words), the index variable and N.
func shardCommand(t *testing.T, where, script string) (flags, index string, n int) {
	t.Helper()
	m := shardRE.FindStringSubmatch(script)
	if m == nil {
		t.Fatalf("%s: no simulate explore ... -shard i/N in %q", where, script)
	}
	fmt.Sscan(m[3], &n)
	flags = strings.Join(strings.Fields(strings.ReplaceAll(m[1], "\\\n", " ")), " ")
	return flags, m[2], n
}

// mergeFiles checks that merge, a command, merges every shard's file
// (file(i) for i from 0 to n-1) once.
func mergeFiles(t *testing.T, where, merge string, n int, file func(i int) string) {
	t.Helper()
	args := strings.Fields(merge)
	i := slices.Index(args, "-merge")
	if i < 1 || args[i-1] != "explore" {
		t.Fatalf("%s: %q is not simulate explore -merge", where, merge)
	}
	var want []string
	for k := range n {
		want = append(want, file(k))
	}
	if got := args[i+1:]; !slices.Equal(got, want) {
		t.Errorf("%s: merges %q, want %q", where, got, want)
	}
}

// TestShardManifests parses the GitHub Actions workflow and the
// Kubernetes Jobs of docs/shards and checks that each runs every shard of
// one search once, writes its result where the merge reads it, and merges
// them all; and that both search what docs/explorer.md says.
func TestShardManifests(t *testing.T) {
	gh := yamlDocs(t, "github-actions.yml")
	if len(gh) != 1 {
		t.Fatalf("github-actions.yml: %d documents, want 1", len(gh))
	}
	w := gh[0]
	where := "github-actions.yml"
	var indexes []int
	for _, v := range at(t, where, w, "jobs", "shard", "strategy", "matrix", "index").([]any) {
		indexes = append(indexes, v.(int))
	}
	steps := at(t, where, w, "jobs", "shard", "steps").([]any)
	var ghFlags string
	var n int
	for _, s := range steps {
		m := s.(map[string]any)
		if run, ok := m["run"].(string); ok && strings.Contains(run, "-shard") {
			var index string
			ghFlags, index, n = shardCommand(t, where, run)
			if index != "${{ matrix.index }}" ||
				!strings.Contains(run, "-format json > shard-${{ matrix.index }}.json") {
				t.Errorf("%s: the shard's step %q does not search and write the matrix's shard",
					where, run)
			}
		}
		if m["uses"] == "actions/upload-artifact@v4" &&
			at(t, where, m, "with", "path") != "shard-${{ matrix.index }}.json" {
			t.Errorf("%s: uploads %v", where, at(t, where, m, "with", "path"))
		}
	}
	want := make([]int, n)
	for i := range want {
		want[i] = i
	}
	if n < 2 || !slices.Equal(indexes, want) {
		t.Errorf("%s: the matrix's indexes %v, for %d shards", where, indexes, n)
	}
	if at(t, where, w, "jobs", "merge", "needs") != "shard" {
		t.Errorf("%s: the merge does not wait for the shards", where)
	}
	msteps := at(t, where, w, "jobs", "merge", "steps").([]any)
	last := msteps[len(msteps)-1].(map[string]any)["run"].(string)
	mergeFiles(t, where, last, n, func(i int) string { return fmt.Sprintf("shard-%d.json", i) })

	k8s := yamlDocs(t, "indexed-job.yaml")
	where = "indexed-job.yaml"
	if len(k8s) != 2 || k8s[0]["kind"] != "PersistentVolumeClaim" || k8s[1]["kind"] != "Job" {
		t.Fatalf("%s: want a PersistentVolumeClaim and a Job", where)
	}
	claim := at(t, where, k8s[0], "metadata", "name")
	job := k8s[1]
	spec := at(t, where, job, "spec").(map[string]any)
	if job["apiVersion"] != "batch/v1" || spec["completionMode"] != "Indexed" ||
		spec["completions"] != n || spec["parallelism"] != n {
		t.Errorf("%s: want an Indexed batch/v1 Job of %d completions, %d at once: %v",
			where, n, n, spec)
	}
	pod := at(t, where, spec, "template", "spec")
	if at(t, where, pod, "restartPolicy") != "Never" ||
		at(t, where, pod, "volumes", 0, "persistentVolumeClaim", "claimName") != claim {
		t.Errorf("%s: the pods restart, or write elsewhere than %v", where, claim)
	}
	script := at(t, where, pod, "containers", 0, "args", 0).(string)
	k8sFlags, index, kn := shardCommand(t, where, script)
	if index != "$JOB_COMPLETION_INDEX" || kn != n || k8sFlags != ghFlags ||
		!strings.Contains(script, `> "/results/shard-$JOB_COMPLETION_INDEX.json"`) {
		t.Errorf("%s: the pod's search %q (-shard %s/%d) is not the workflow's %q of %d shards",
			where, k8sFlags, index, kn, ghFlags, n)
	}
	if at(t, where, pod, "containers", 0, "volumeMounts", 0, "mountPath") != "/results" {
		t.Errorf("%s: the results are not mounted at /results", where)
	}

	where = "merge-job.yaml"
	merge := yamlDocs(t, "merge-job.yaml")
	if len(merge) != 1 || merge[0]["kind"] != "Job" {
		t.Fatalf("%s: want one Job", where)
	}
	mpod := at(t, where, merge[0], "spec", "template", "spec")
	var cmd []string
	for _, a := range at(t, where, mpod, "containers", 0, "command").([]any) {
		cmd = append(cmd, a.(string))
	}
	mergeFiles(t, where, strings.Join(cmd, " "), n,
		func(i int) string { return fmt.Sprintf("/results/shard-%d.json", i) })
	if at(t, where, mpod, "volumes", 0, "persistentVolumeClaim", "claimName") != claim {
		t.Errorf("%s: reads another volume than %v", where, claim)
	}

	page := read(t, "explorer.md")
	if !strings.Contains(page, "simulate explore "+ghFlags) {
		t.Errorf("explorer.md does not show the search the manifests split: %q", ghFlags)
	}
}
