package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/search"
	"github.com/lockmarket/lockmarket/internal/report/output"
)

// maxShards bounds -shard's N.
const maxShards = 10000

// errShardForm is parseShard's error for a value not of the form i/N.
var errShardForm = errors.New("want i/N: shard i (0 to N-1) of N, N from 2")

// parseShard reads -shard's "i/N".
func parseShard(s string) (search.Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 2 || n > maxShards || i < 0 || i >= n {
		return search.Shard{}, errShardForm
	}
	return search.Shard{Index: i, Count: n}, nil
}

// readShard reads -shard, which goes with the exhaustive mode only.
func (o *exploreOptions) readShard(f *cmdFlags, shard string) error {
	if shard == "" {
		return nil
	}
	sh, err := parseShard(shard)
	if err != nil {
		return f.Bad("-shard %q: %v", shard, err)
	}
	if o.mode != string(sched.Exhaustive) {
		return f.Bad("-shard goes with -mode exhaustive (a random search splits by -seed)")
	}
	o.shard = sh
	return nil
}

// identity is what names a search for its shards: what it explores (the
// target, with the code it runs when given as files), within which
// bounds, and the options that choose its schedules.
type identity struct {
	Target      string          `json:"target"`
	About       string          `json:"about"`
	Code        []string        `json:"code"`
	Model       json.RawMessage `json:"model"`
	Checked     []string        `json:"checked"`
	Mode        string          `json:"mode"`
	NoReduction bool            `json:"no_reduction"`
	First       bool            `json:"first"`
}

// fingerprint names the search o makes of res's target: a digest of its
// identity.
func (o exploreOptions) fingerprint(res *result.Result) (string, error) {
	model, err := json.Marshal(res.Model)
	if err != nil {
		return "", err
	}
	id := identity{Target: res.Target, About: res.About, Model: model, Checked: res.Checked,
		Mode: res.Mode, NoReduction: o.noReduce, First: o.first}
	code, err := o.code()
	if err != nil {
		return "", err
	}
	id.Code = code
	b, err := json.Marshal(id)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// code is the code of a target given as files: each Lua script's source,
// or a digest of every regular file of -recipe-dir, by its name there.
func (o exploreOptions) code() ([]string, error) {
	l := o.lua
	code := []string{l.Acquire.Source, l.Release.Source, l.Extend.Source,
		l.ReadAcquire.Source, l.ReadRelease.Source, l.WriteAcquire.Source, l.WriteRelease.Source}
	if o.dir == "" {
		return code, nil
	}
	err := filepath.WalkDir(o.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(o.dir, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		code = append(code, filepath.ToSlash(rel)+" "+hex.EncodeToString(sum[:]))
		return nil
	})
	return code, err
}

// markShard writes into a shard's result the search's fingerprint and the
// program's version, which -merge compares.
func (o exploreOptions) markShard(res *result.Result) error {
	if res.Shard == nil {
		return nil
	}
	fp, err := o.fingerprint(res)
	if err != nil {
		return err
	}
	res.Shard.Fingerprint, res.Shard.Commit = fp, output.Version()
	return nil
}

const mergeUsage = `usage: simulate explore -merge [-format table|json] [-v] FILE...

Combines the JSON results (-format json) of the shards of one exhaustive
search (simulate explore ... -shard i/N, for i from 0 to N-1) into the
result of the whole search: the shortest counterexample of each property
kept, exhaustive only if every shard was, and the whole search's count of
schedules, recounted over what the shards explored when each ran with
-workers 1 to the end (else the shards' counts summed).
A file that is not a shard, a shard of another target, model, options or
program, a shard given twice and a shard missing are refused (exit 2),
naming the file. Exit status as the whole search's: 0 no violation, 1 a
violation (replayed by the shard that found it), 2 bad input, 3 no
violation but no proof.

Flags:
`

const mergeExample = `
Example:
  for i in 0 1 2 3; do
    simulate explore -recipe 6 -fixed -clients 3 -workers 1 -shard $i/4 -format json \
      > shard-$i.json
  done
  simulate explore -merge shard-*.json
`

// maxShardFile bounds the size of a shard's file.
const maxShardFile = 64 << 20

// isMerge reports whether args ask for -merge.
func isMerge(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "-merge" || a == "--merge" || a == "-merge=true" || a == "--merge=true" {
			return true
		}
	}
	return false
}

// runMerge is "simulate explore -merge FILE...".
func runMerge(args []string, stdout, stderr io.Writer) error {
	f := newCmdFlags("simulate explore -merge", mergeUsage, mergeExample, stderr)
	var merge, verbose bool
	var format string
	f.BoolVar(&merge, "merge", false, "merge the shards' results given as arguments")
	f.format(&format, "table", "json")
	f.verbose(&verbose, "the counterexample's steps as well as its timeline")
	files, err := mergeArgs(f, args)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return f.Bad("-merge: give the shards' JSON files")
	}
	if format != "table" && format != "json" {
		return f.Bad("-format %q: want one of table, json", format)
	}
	var parts []result.Part
	var env output.Env
	for i, name := range files {
		res, e, err := readShardFile(name)
		if err != nil {
			return f.Bad("%s: %v", name, err)
		}
		if i == 0 {
			env = e
		}
		parts = append(parts, result.Part{Name: name, Result: res})
	}
	res, err := result.MergeShards(parts)
	if err != nil {
		return f.Bad("%v", strings.TrimPrefix(err.Error(), result.ErrMerge.Error()+": "))
	}
	if format == "json" {
		err = writeExploreJSON(stdout, res, env)
	} else {
		err = writeExploreTable(stdout, res, env, verbose)
	}
	if err != nil {
		return err
	}
	return exploreVerdict(res, stderr)
}

// mergeArgs reads -merge's flags, before and after its files, and returns
// the files.
func mergeArgs(f *cmdFlags, args []string) ([]string, error) {
	var files []string
	for rest := args; len(rest) > 0; {
		if rest[0] == "-" || !strings.HasPrefix(rest[0], "-") {
			files = append(files, rest[0])
			rest = rest[1:]
			continue
		}
		err := output.ParseFlags(f.FlagSet, rest)
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		if err != nil {
			return nil, f.Bad("%v", err)
		}
		if rest = f.Args(); len(args) > 0 && args[len(args)-len(rest)-1] == "--" {
			return append(files, rest...), nil
		}
	}
	return files, nil
}

// readShardFile reads a shard's JSON result, and the environment it ran
// in.
func readShardFile(name string) (*result.Result, output.Env, error) {
	var env output.Env
	fh, err := os.Open(name)
	if err != nil {
		return nil, env, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxShardFile+1))
	if err != nil {
		return nil, env, err
	}
	if len(b) > maxShardFile {
		return nil, env, fmt.Errorf("larger than %d MiB", maxShardFile>>20)
	}
	var res result.Result
	if err := json.Unmarshal(b, &res); err != nil {
		return nil, env, fmt.Errorf("not an explorer's JSON result: %v", err)
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return nil, env, fmt.Errorf("not an explorer's JSON result: %v", err)
	}
	return &res, env, nil
}
