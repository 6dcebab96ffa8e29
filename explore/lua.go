package explore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/locking"
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
	Acquire, Release, Extend                             Script
	ReadAcquire, ReadRelease, WriteAcquire, WriteRelease Script
}

// RW reports whether the recipe is a read-write lock.
func (r LuaRecipe) RW() bool { return r.ReadAcquire.Source != "" }

// Lua returns the target of a lock given as Lua scripts.
func Lua(r LuaRecipe) (*Target, error) {
	rw := r.RW()
	var need []Script
	if rw {
		need = []Script{r.ReadAcquire, r.ReadRelease, r.WriteAcquire, r.WriteRelease}
		if r.Acquire.Source != "" || r.Release.Source != "" || r.Extend.Source != "" {
			return nil, errors.New("give either -acquire/-release[/-extend] or the four read-write scripts, not both")
		}
	} else {
		need = []Script{r.Acquire, r.Release}
	}
	for _, s := range need {
		if s.Source == "" {
			if rw {
				return nil, errors.New("a read-write recipe needs -read-acquire, -read-release, -write-acquire and -write-release")
			}
			return nil, errors.New("a Lua recipe needs -acquire and -release")
		}
	}
	scripts := map[string]*redis.Script{}
	all := append(need, r.Extend)
	for _, s := range all {
		if s.Source == "" {
			continue
		}
		sc := redis.NewScript(s.Source)
		registerScript(filepath.Base(s.Name), sc)
		scripts[s.Name] = sc
	}
	name := "lua " + filepath.Base(r.Acquire.Name) + " " + filepath.Base(r.Release.Name)
	if rw {
		name = "lua read-write " + filepath.Base(r.ReadAcquire.Name)
	}
	t := &Target{Name: name, About: "a lock written as Lua scripts (KEYS[1] lock key, ARGV[1] token, ARGV[2] TTL ms)",
		Clients: 2, rw: rw, extend: r.Extend.Source != "", lockKeys: oneLockKey, Checks: lockChecks}
	if rw {
		t.Clients = 3
	}
	t.check = func(ctx context.Context, rdb redis.UniversalClient, _ string) error {
		for _, s := range all {
			if s.Source == "" {
				continue
			}
			if err := rdb.ScriptLoad(ctx, s.Source).Err(); err != nil {
				var rerr redis.Error
				if errors.As(err, &rerr) {
					return fmt.Errorf("%w: %s: %v", ErrBadScript, s.Name, err)
				}
				return err
			}
		}
		return nil
	}
	t.newLock = func(rdb redis.UniversalClient, c *client, m Model, ns string) locker {
		l := &luaLocker{rdb: rdb, key: lockKey(ns), ttl: m.TTL, clk: clock{c}}
		if rw {
			l.acq, l.rel = [2]namedScript{{r.ReadAcquire.Name, scripts[r.ReadAcquire.Name]}, {r.WriteAcquire.Name, scripts[r.WriteAcquire.Name]}},
				[2]namedScript{{r.ReadRelease.Name, scripts[r.ReadRelease.Name]}, {r.WriteRelease.Name, scripts[r.WriteRelease.Name]}}
		} else {
			a := namedScript{r.Acquire.Name, scripts[r.Acquire.Name]}
			rel := namedScript{r.Release.Name, scripts[r.Release.Name]}
			l.acq, l.rel = [2]namedScript{a, a}, [2]namedScript{rel, rel}
			if r.Extend.Source != "" {
				l.ext = namedScript{r.Extend.Name, scripts[r.Extend.Name]}
			}
		}
		return l
	}
	return t, nil
}

type namedScript struct {
	name string
	s    *redis.Script
}

// luaLocker runs a Lua recipe; acq and rel are indexed by write (0: read).
type luaLocker struct {
	rdb      redis.UniversalClient
	key      string
	ttl      time.Duration
	clk      clock
	acq, rel [2]namedScript
	ext      namedScript
}

type luaHeld struct {
	l     *luaLocker
	write bool
	token string
	start time.Duration
}

func idx(write bool) int {
	if write {
		return 1
	}
	return 0
}

// call runs a script and reads its answer: true for 1, false for 0 or
// nil, ErrConvention for anything else.
func (l *luaLocker) call(ctx context.Context, s namedScript, token string) (bool, error) {
	v, err := s.s.Run(ctx, l.rdb, []string{l.key}, token, l.clk.c.w.dilate(l.ttl).Milliseconds()).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		var rerr redis.Error
		if errors.As(err, &rerr) {
			return false, fmt.Errorf("%w: %s failed: %v", ErrConvention, s.name, err)
		}
		return false, err
	}
	switch v {
	case int64(1):
		return true, nil
	case int64(0):
		return false, nil
	}
	return false, fmt.Errorf("%w: %s returned %v (%T); want 1 or 0", ErrConvention, s.name, v, v)
}

func (l *luaLocker) acquire(ctx context.Context, write bool) (held, error) {
	token := uuid.NewString()
	start := l.clk.now()
	ok, err := l.call(ctx, l.acq[idx(write)], token)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, locking.ErrNotAcquired
	}
	return &luaHeld{l: l, write: write, token: token, start: start}, nil
}

func (h *luaHeld) release(ctx context.Context) error {
	ok, err := h.l.call(ctx, h.l.rel[idx(h.write)], h.token)
	if err == nil && !ok {
		return locking.ErrNotHeld
	}
	return err
}

func (h *luaHeld) extend(ctx context.Context) error {
	if h.l.ext.s == nil {
		return nil
	}
	start := h.l.clk.now()
	ok, err := h.l.call(ctx, h.l.ext, h.token)
	if err != nil {
		return err
	}
	if !ok {
		return locking.ErrNotHeld
	}
	h.l.clk.c.w.mu.Lock()
	h.start = start
	h.l.clk.c.w.mu.Unlock()
	return nil
}

func (h *luaHeld) end() time.Duration { return h.start + h.l.ttl }

var scriptMu sync.Mutex
