package targets

import (
	"errors"
	"path/filepath"
	"slices"

	"github.com/lockmarket/lockmarket/internal/explore/sched"
)

// ErrBadScript is returned for a Lua script that Redis does not accept
// (SCRIPT LOAD fails: it does not parse).
var ErrBadScript = errors.New("explore: bad Lua script")

// ErrConvention is returned when a script answers outside the convention:
// acquire and extend return 1 (success) or 0 (or nil: refused); release
// returns 1 (it deleted the lock) or 0.
var ErrConvention = errors.New("explore: script answered outside the convention")

// Script is one Lua file of a recipe.
type Script struct {
	// Name is how it is shown (the file's base name).
	Name string
	// Source is the Lua code.
	Source string
}

// LuaRecipe is a lock written as Lua scripts, as users write them. Every
// script gets KEYS[1] = the lock key, ARGV[1] = the owner's token (fresh
// for each acquisition), ARGV[2] = the TTL in milliseconds. Acquire and
// Extend return 1 when they succeed and 0 (or nil) when they do not;
// Release returns 1 when it deleted the lock, 0 otherwise.
//
// Either Acquire and Release (and optionally Extend, called once inside
// each critical section), or the four read-write scripts are set.
type LuaRecipe struct {
	// Acquire, Release and the optional Extend make a mutex.
	Acquire, Release, Extend Script
	// ReadAcquire, ReadRelease, WriteAcquire and WriteRelease make a
	// read-write lock.
	ReadAcquire, ReadRelease, WriteAcquire, WriteRelease Script
}

// RW reports whether the recipe is a read-write lock.
func (r LuaRecipe) RW() bool { return r.ReadAcquire.Source != "" }

// Lua returns the target of a lock given as Lua scripts.
func Lua(r LuaRecipe) (*sched.Target, error) {
	rw := r.RW()
	var need []Script
	if rw {
		need = []Script{r.ReadAcquire, r.ReadRelease, r.WriteAcquire, r.WriteRelease}
		if r.Acquire.Source != "" || r.Release.Source != "" || r.Extend.Source != "" {
			return nil, errors.New(
				"give either -acquire/-release[/-extend] or the four read-write scripts, not both",
			)
		}
	} else {
		need = []Script{r.Acquire, r.Release}
	}
	for _, s := range need {
		if s.Source == "" {
			if rw {
				return nil, errors.New(
					"a read-write recipe needs -read-acquire, -read-release, -write-acquire and " +
						"-write-release",
				)
			}
			return nil, errors.New("a Lua recipe needs -acquire and -release")
		}
	}
	// The convention, as a manifest built in code.
	mk := func(name string, s Script) *op {
		if s.Source == "" {
			return nil
		}
		return &op{name: name, script: &scriptRef{file: s.Name, source: s.Source},
			keys: []tmpl{{raw: "${lock}", parts: []tmplPart{{name: phLock}}}},
			args: []tmpl{
				{raw: "${token}", parts: []tmplPart{{name: phToken}}},
				{raw: "${ttl}", parts: []tmplPart{{name: phTTL}}},
			},
			ok: []okValue{
				{kind: okInt, i: 1},
			}, refuse: []okValue{{kind: okInt, i: 0}, {kind: okNil}}}
	}
	// The properties of a recipe directory's (LoadRecipe): a lock given
	// as scripts is judged by its replies and its lease too.
	rec := &recipe{rw: rw, strict: true, checks: slices.Clone(recipeChecks), ops: map[string]*op{}}
	add := func(name string, s Script) {
		if o := mk(name, s); o != nil {
			rec.ops[name] = o
		}
	}
	if rw {
		add("read_acquire", r.ReadAcquire)
		add("read_release", r.ReadRelease)
		add("write_acquire", r.WriteAcquire)
		add("write_release", r.WriteRelease)
	} else {
		add("acquire", r.Acquire)
		add("release", r.Release)
		add("extend", r.Extend)
	}
	t := rec.target()
	t.Name = "lua " + filepath.Base(r.Acquire.Name) + " " + filepath.Base(r.Release.Name)
	if rw {
		t.Name = "lua read-write " + filepath.Base(r.ReadAcquire.Name)
	}
	t.About = "a lock written as Lua scripts (KEYS[1] lock key, ARGV[1] token, ARGV[2] TTL ms)"
	return t, nil
}
