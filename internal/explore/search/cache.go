package search

import (
	"slices"
	"sync"
)

// cache is the state cache of an exhaustive search: for each state
// reached, the sleep sets it was reached with, shared by the workers. A
// state reached again with a sleep set that holds one of them has nothing
// left to explore: the run that put it there explores (or has explored)
// every schedule from it that does not begin with a choice of its sleep
// set, and those that do are explored where that choice was.
//
// Entries are added as a state is first reached, before what follows it
// is explored; a worker that finds an entry of another's still at work
// counts on that worker to finish it. That is sound because a state's
// fingerprint holds its depth: the entries a search counts on below a
// state are all deeper, so that, depth by depth from the deepest, every
// entry's subtree is finished by the time the search ends (an exhaustive
// result needs every worker to have finished; a worker that stops or
// diverges makes the search not exhaustive).
type cache[K comparable] struct {
	mu      sync.Mutex
	visited map[Fingerprint][]*asleep[K]
}

// asleep is one sleep set a state was reached with, as the identities of
// its choices (renamed, under a symmetry).
type asleep[K comparable] struct{ keys []K }

// visit looks state fp up with sleep set keys: hit when an entry there
// holds no choice keys lacks; else it adds keys as an entry, and returns
// it (for forget).
func (c *cache[K]) visit(fp Fingerprint, keys []K) (e *asleep[K], hit bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, z := range c.visited[fp] {
		if subsetKeys(z.keys, keys) {
			return nil, true
		}
	}
	e = &asleep[K]{keys: keys}
	c.visited[fp] = append(c.visited[fp], e)
	return e, false
}

// forget removes an entry visit added, of a run that was void.
func (c *cache[K]) forget(fp Fingerprint, e *asleep[K]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.visited[fp] = slices.DeleteFunc(c.visited[fp], func(z *asleep[K]) bool { return z == e })
	if len(c.visited[fp]) == 0 {
		delete(c.visited, fp)
	}
}

// subsetKeys tells whether every key of a is in b.
func subsetKeys[K comparable](a, b []K) bool {
	for _, k := range a {
		if !slices.Contains(b, k) {
			return false
		}
	}
	return true
}
