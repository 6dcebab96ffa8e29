package timeline

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/redis/rediscmd"
)

// ev is an event during analysis, with its Seq as recorded.
type ev struct {
	Event
	origSeq int
}

// hold is one client's hold of a lock, as its commands show it.
type hold struct {
	client, key, token string
	ttl                time.Duration // 0: no expiry
	expires            time.Duration // when the lease runs out; 0: never
	expired, released  bool
}

func (h *hold) live() bool { return !h.expired && !h.released }

// analysis reads the lock commands of a recording for their meaning.
type analysis struct {
	prefix  string
	out     []ev
	cmds    map[int]int // index in out of the commands, by recorded Seq
	pending map[int][]pair
	size    map[int]int                 // commands per batch
	cur     map[string]*hold            // the lock's current holder by key
	held    map[string]map[string]*hold // what each client believes it holds
	watched map[string][]string
}

// pair is a command and its reply, and where they are in out.
type pair struct {
	cmd, reply Event
	ci, ri     int
}

func (p pair) name() string { return strings.ToLower(p.cmd.Args[0]) }
func (p pair) arg(i int) string {
	if i < len(p.cmd.Args) {
		return p.cmd.Args[i]
	}
	return ""
}

// analyse returns the recorded events with the events they mean
// inserted after them, and lease expiries at the time they happened.
func analyse(raw []Event, prefix string, end time.Duration) []ev {
	a := &analysis{prefix: prefix, cmds: map[int]int{}, pending: map[int][]pair{}, size: map[int]int{},
		cur: map[string]*hold{}, held: map[string]map[string]*hold{}, watched: map[string][]string{}}
	for _, e := range raw {
		if e.Kind == Command && e.Batch != 0 {
			a.size[e.Batch]++
		}
	}
	for _, e := range raw {
		a.advance(e.At)
		x := ev{Event: e, origSeq: e.Seq}
		switch e.Kind {
		case Command:
			x.Verbose = true
			a.out = append(a.out, x)
			a.cmds[e.Seq] = len(a.out) - 1
		case Reply:
			x.Verbose = true
			a.out = append(a.out, x)
			ci, ok := a.cmds[e.Ref]
			if !ok || len(a.out[ci].Args) == 0 {
				continue
			}
			cmd := a.out[ci].Event
			p := pair{cmd: cmd, reply: e, ci: ci, ri: len(a.out) - 1}
			if cmd.Batch == 0 {
				a.batch([]pair{p})
				continue
			}
			a.pending[cmd.Batch] = append(a.pending[cmd.Batch], p)
			if len(a.pending[cmd.Batch]) == a.size[cmd.Batch] {
				a.batch(a.pending[cmd.Batch])
				delete(a.pending, cmd.Batch)
			}
		case LeaseExpired:
			if h := a.cur[e.Key]; h != nil {
				x.Client = h.client
				h.expired = true
			}
			if x.Detail == "" {
				x.Detail = "lease on " + a.short(e.Key) + " ran out"
			}
			a.out = append(a.out, x)
		default:
			a.out = append(a.out, x)
		}
	}
	a.advance(end)
	return a.out
}

// advance emits the expiries of leases that ran out by their TTL before
// at, in order.
func (a *analysis) advance(at time.Duration) {
	var due []*hold
	seen := map[*hold]bool{}
	for _, hs := range a.held {
		for _, h := range hs {
			if !h.expired && !h.released && h.expires > 0 && h.expires <= at && !seen[h] {
				due = append(due, h)
				seen[h] = true
			}
		}
	}
	sort.Slice(due, func(i, j int) bool { return due[i].expires < due[j].expires })
	for _, h := range due {
		h.expired = true
		a.emit(ev{Event: Event{Client: h.client, At: h.expires, Kind: LeaseExpired, Key: h.key,
			Detail: fmt.Sprintf("lease on %s ran out (its %v TTL passed)", a.short(h.key), h.ttl)}})
	}
}

func (a *analysis) emit(e ev) { a.out = append(a.out, e) }

// verbose sets whether a command and its reply are for the full view
// only: those on a lock that say nothing more than the event read from
// them, and those on anything but a lock.
func (a *analysis) verbose(p pair, v bool) { a.out[p.ci].Verbose, a.out[p.ri].Verbose = v, v }

func (a *analysis) short(key string) string { return strings.TrimPrefix(key, a.prefix) }

func (a *analysis) isLock(key string) bool { return strings.HasPrefix(key, a.prefix+"lock:") }

// touchesLock says whether a command names a lock key.
func (a *analysis) touchesLock(args []string) bool {
	return slices.ContainsFunc(args[1:], a.isLock)
}

// writes are the commands that change market data in a commit.
var writes = map[string]bool{"hincrby": true, "hset": true, "sadd": true, "srem": true, "zadd": true,
	"zrem": true, "xadd": true, "incrby": true, "set": true}

// batch reads the commands sent together, in order.
func (a *analysis) batch(ps []pair) {
	client := ps[0].cmd.Client
	at := ps[len(ps)-1].reply.At
	if ps[0].name() == "multi" {
		exec := ps[len(ps)-1]
		var written []pair
		for _, p := range ps[1 : len(ps)-1] {
			if writes[p.name()] && !a.isLock(p.arg(1)) {
				written = append(written, p)
			}
		}
		watched := a.watched[client]
		delete(a.watched, client)
		if len(written) > 0 {
			if exec.reply.Err == "" {
				a.commit(client, at, "EXEC applied: "+a.summary(written))
			} else {
				why := "EXEC failed: " + exec.reply.Err
				if exec.reply.Err == "aborted" {
					why = "EXEC aborted: a watched key changed"
					if len(watched) > 0 {
						why += " (WATCH " + strings.Join(watched, " ") + ")"
					}
				}
				a.emit(ev{Event: Event{Client: client, At: at, Kind: CommitRefused, Detail: why}})
			}
		}
		for _, p := range ps {
			a.verbose(p, !a.touchesLock(p.cmd.Args))
		}
		if exec.reply.Err != "" {
			for _, p := range ps {
				a.verbose(p, true) // nothing inside ran: the refusal says it
			}
			return
		}
		for _, p := range ps[1 : len(ps)-1] {
			if a.lock(client, at, p) {
				a.verbose(p, true)
			}
		}
		return
	}
	// Each reply is followed by what it meant: take the replies off the
	// end and put them back one by one.
	tail := len(a.out) - len(ps)
	var replies []ev
	contiguous := tail >= 0
	for i, p := range ps {
		contiguous = contiguous && p.ri == tail+i
	}
	if contiguous {
		replies = slices.Clone(a.out[tail:])
		a.out = a.out[:tail]
	}
	for i, p := range ps {
		if replies != nil {
			p.ri = len(a.out)
			a.out = append(a.out, replies[i])
		}
		if strings.HasPrefix(p.reply.Err, "NOSCRIPT") {
			a.verbose(p, true) // the client sends the script itself next
			continue
		}
		if a.touchesLock(p.cmd.Args) {
			a.verbose(p, false)
		}
		switch p.name() {
		case "watch":
			for _, k := range p.cmd.Args[1:] {
				a.watched[client] = append(a.watched[client], a.short(k))
			}
		case "unwatch":
			delete(a.watched, client)
		}
		if a.lock(client, at, p) {
			a.verbose(p, true)
		}
		a.script(client, at, p)
	}
}

// summary says what a commit wrote, in a few words.
func (a *analysis) summary(ps []pair) string {
	var parts []string
	for _, p := range ps {
		k := a.short(p.arg(1))
		switch {
		case p.name() == "sadd" && strings.HasPrefix(k, "inventory:"):
			parts = append(parts, fmt.Sprintf("%s into %s's inventory", p.arg(2), strings.TrimPrefix(k, "inventory:")))
		case p.name() == "zrem" && k == "market:":
			parts = append(parts, p.arg(2)+" off the market")
		case p.name() == "zadd" && k == "market:":
			parts = append(parts, "listed "+p.arg(len(p.cmd.Args)-1))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%d writes", len(ps))
	}
	return strings.Join(parts, ", ")
}

// commit emits a commit of client, marked when the client committed under
// a lock it no longer held.
func (a *analysis) commit(client string, at time.Duration, detail string) {
	e := ev{Event: Event{Client: client, At: at, Kind: Commit, Detail: detail}}
	for _, h := range a.holds(client) {
		switch cur := a.cur[h.key]; {
		case h.expired:
			e.Violation = fmt.Sprintf("commits after its lease on %s ran out", a.short(h.key))
		case cur != h && cur != nil:
			e.Violation = fmt.Sprintf("commits while %s holds %s", cur.client, a.short(h.key))
		case cur != h:
			e.Violation = fmt.Sprintf("commits without holding %s: its hold is gone", a.short(h.key))
		}
		if e.Violation != "" {
			e.Key = h.key
			break
		}
	}
	a.emit(e)
}

// holds returns what client believes it holds, by key.
func (a *analysis) holds(client string) []*hold {
	var out []*hold
	for _, h := range a.held[client] {
		if !h.released {
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

// script reads a script run on the market (the Lua strategy): "ok" is a
// commit, anything else a refusal.
func (a *analysis) script(client string, at time.Duration, p pair) {
	if n := p.name(); n != "eval" && n != "evalsha" {
		return
	}
	keys, _, _ := rediscmd.ScriptArgs(p.cmd.Args)
	if !slices.Contains(keys, a.prefix+"market:") {
		return
	}
	switch {
	case p.reply.Err != "":
		a.emit(ev{Event: Event{Client: client, At: at, Kind: CommitRefused, Detail: "script failed: " + p.reply.Err}})
	case p.reply.Value == "ok":
		a.commit(client, at, "script applied")
	default:
		a.emit(ev{Event: Event{Client: client, At: at, Kind: CommitRefused, Detail: "script refused: " + p.reply.Value}})
	}
}

// lock reads a command on a lock key for its meaning
// (rediscmd.ReadLock) and emits it; it reports whether it did.
func (a *analysis) lock(client string, at time.Duration, p pair) bool {
	l, ok := rediscmd.ReadLock(p.cmd.Args, p.reply.Value, p.reply.Err, a.isLock)
	if !ok {
		return false
	}
	switch l.Op {
	case rediscmd.Acquire:
		a.acquire(client, at, p.cmd.At, l.Key, l.Token, l.TTL, l.How, l.Fence)
	case rediscmd.AcquireFailed:
		a.failed(client, at, l.Key, l.How)
	case rediscmd.Lease:
		a.lease(client, at, p.cmd.At, l.Key, l.TTL, l.How)
	case rediscmd.Delete:
		a.del(client, at, l.Key, l.Done)
	case rediscmd.Release:
		a.scriptRelease(client, at, l.Key, l.Done)
	}
	return true
}

func (a *analysis) acquire(client string, at, sent time.Duration, key, token string, ttl time.Duration, how, fence string) {
	var others []string
	for c, hs := range a.held {
		if h := hs[key]; c != client && h != nil && h.live() {
			others = append(others, c)
		}
	}
	sort.Strings(others)
	h := &hold{client: client, key: key, token: token, ttl: ttl}
	if ttl > 0 {
		h.expires = sent + ttl
	}
	if old := a.held[client][key]; old != nil {
		old.released = true
	}
	a.cur[key] = h
	if a.held[client] == nil {
		a.held[client] = map[string]*hold{}
	}
	a.held[client][key] = h
	lease := "no expiry"
	if ttl > 0 {
		lease = "lease " + ttl.String()
	}
	detail := fmt.Sprintf("%s → holds %s (token %s, %s)", how, a.short(key), clip(token, 8), lease)
	if fence != "" {
		detail = fmt.Sprintf("%s → holds %s (token %s, fence %s, %s)", how, a.short(key), clip(token, 8), fence, lease)
	}
	e := ev{Event: Event{Client: client, At: at, Kind: Acquire, Key: key, Detail: detail}}
	if len(others) > 0 {
		e.Violation = fmt.Sprintf("two holders: %s still holds %s", strings.Join(others, ", "), a.short(key))
	}
	a.emit(e)
}

func (a *analysis) failed(client string, at time.Duration, key, how string) {
	by := ""
	if h := a.cur[key]; h != nil && h.client != client && !h.expired {
		by = " by " + h.client
	}
	a.emit(ev{Event: Event{Client: client, At: at, Kind: AcquireFailed, Key: key,
		Detail: fmt.Sprintf("%s → %s is held%s", how, a.short(key), by)}})
}

func (a *analysis) lease(client string, at, sent time.Duration, key string, ttl time.Duration, how string) {
	h := a.cur[key]
	if h == nil {
		return
	}
	h.ttl, h.expires, h.expired = ttl, sent+ttl, false
	a.emit(ev{Event: Event{Client: client, At: at, Kind: LeaseStart, Key: key,
		Detail: fmt.Sprintf("%s → lease of %v on %s", how, ttl, a.short(key))}})
}

// del is a DEL of a lock key: whoever holds it, it is gone.
func (a *analysis) del(client string, at time.Duration, key string, deleted bool) {
	e := ev{Event: Event{Client: client, At: at, Kind: Release, Key: key}}
	h := a.cur[key]
	switch {
	case !deleted:
		e.Detail = "DEL → " + a.short(key) + " was already gone"
	case h != nil && h.client != client:
		e.Detail = fmt.Sprintf("DEL → deletes %s, which %s holds", a.short(key), h.client)
		e.Violation = fmt.Sprintf("deletes %s's lock", h.client)
	default:
		e.Detail = "DEL → releases " + a.short(key)
	}
	if h != nil && h.client == client {
		h.released = true
	}
	if own := a.held[client][key]; own != nil {
		own.released = true
	}
	if deleted {
		delete(a.cur, key)
	}
	a.emit(e)
}

// scriptRelease is a release that deletes the lock only if it holds the
// releaser's token.
func (a *analysis) scriptRelease(client string, at time.Duration, key string, deleted bool) {
	e := ev{Event: Event{Client: client, At: at, Kind: Release, Key: key}}
	if deleted {
		e.Detail = "release script → releases " + a.short(key)
		delete(a.cur, key)
	} else {
		e.Detail = "release script → " + a.short(key) + " is not ours any more: left alone"
	}
	if own := a.held[client][key]; own != nil {
		own.released = true
	}
	a.emit(e)
}
