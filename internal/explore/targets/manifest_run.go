package targets

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/lockmarket/lockmarket/internal/explore/plumbing"
	"github.com/lockmarket/lockmarket/internal/explore/result"
	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/redis/rediscmd"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/redis/go-redis/v9"
)

// opNames are a recipe's acquire and release ops, by write (0: read).
func (r *recipe) acquireOp(write bool) *op {
	if !r.rw {
		return r.ops["acquire"]
	}
	if write {
		return r.ops["write_acquire"]
	}
	return r.ops["read_acquire"]
}

func (r *recipe) releaseOp(write bool) *op {
	if !r.rw {
		return r.ops["release"]
	}
	if write {
		return r.ops["write_release"]
	}
	return r.ops["read_release"]
}

// sortedOps is the ops in a fixed order.
func (r *recipe) sortedOps() []*op {
	var out []*op
	for _, name := range append(slices.Clone(mutexOps), rwlockOps...) {
		if o := r.ops[name]; o != nil && !slices.Contains(out, o) {
			out = append(out, o)
		}
	}
	return out
}

func (r *recipe) about() string {
	kind := "a lock"
	if r.rw {
		kind = "a read-write lock"
	}
	if r.permits > 0 {
		kind = fmt.Sprintf("a semaphore of %d permits", r.permits)
	}
	var parts []string
	for _, o := range r.sortedOps() {
		if o.script != nil {
			parts = append(parts, o.name+" "+filepath.Base(o.script.file))
		} else {
			parts = append(parts, fmt.Sprintf("%s in %d step(s)", o.name, len(o.steps)))
		}
	}
	s := kind + " from " + ManifestFile + ": " + strings.Join(parts, ", ")
	if r.reentrant {
		s += "; taken twice, nested"
	}
	return s
}

// okText is an op's ok as the manifest gives it.
func okText(o *op) string {
	if o.anyOK {
		return `"any"`
	}
	var parts []string
	for _, v := range o.ok {
		parts = append(parts, v.String())
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// opDescs lists the recipe's ops in order, each with its ok.
func (r *recipe) opDescs() []sched.OpDesc {
	ds := []sched.OpDesc{}
	for _, o := range r.sortedOps() {
		ds = append(ds, sched.OpDesc{Name: o.name, OK: okText(o)})
	}
	return ds
}

// target makes the recipe's target.
func (r *recipe) target() *sched.Target {
	for _, o := range r.sortedOps() {
		if o.script != nil && o.sc == nil {
			o.sc = redis.NewScript(o.script.source)
			sched.RegisterScript(filepath.Base(o.script.file), o.sc)
		}
		for _, st := range o.steps {
			if st.script != nil && st.sc == nil {
				st.sc = redis.NewScript(st.script.source)
				sched.RegisterScript(filepath.Base(st.script.file), st.sc)
			}
		}
	}
	t := &sched.Target{
		Name:    r.name,
		About:   r.about(),
		Clients: 2,
		Checks:  r.checks,
		Lock: &sched.Lock{
			New: func(c *sched.Client) sched.Locker {
				return &recipeLocker{
					r:     r,
					rdb:   c.Redis(),
					c:     c,
					key:   sched.LockKey(c.Prefix()),
					ttl:   c.Model().TTL,
					owner: result.OwnerName(c.Name()),
				}
			},
			Keys:      sched.SingleLockKey,
			Check:     r.check,
			Liveness:  r.liveness,
			Ops:       r.opDescs(),
			ReadWrite: r.rw,
			Reentrant: r.reentrant,
			Extend:    r.ops["extend"] != nil,
		},
		Traits: sched.Traits{Alike: !r.rw},
	}
	if r.rw {
		t.Clients = 3
	}
	r.semaphore(t)
	return t
}

// check loads every script (one that does not parse is ErrBadScript) and
// asks the server whether it knows every step's command.
func (r *recipe) check(ctx context.Context, rdb redis.UniversalClient, _ string) error {
	for _, o := range r.sortedOps() {
		if o.script != nil {
			if err := rdb.ScriptLoad(ctx, o.script.source).Err(); err != nil {
				var rerr redis.Error
				if !errors.As(err, &rerr) {
					return err
				}
				if r.strict {
					return fmt.Errorf("%w: %s: %v", ErrBadScript, o.script.file, err)
				}
				return &manifestError{
					field: "ops." + o.name + ".script",
					msg: fmt.Sprintf("%s does not load: %v",
						o.script.file, err),
					also: ErrBadScript,
				}
			}
			continue
		}
		for i, st := range o.steps {
			if st.script != nil {
				if err := rdb.ScriptLoad(ctx, st.script.source).Err(); err != nil {
					var rerr redis.Error
					if !errors.As(err, &rerr) {
						return err
					}
					return &manifestError{field: fmt.Sprintf("ops.%s.steps[%d].script", o.name, i),
						msg: fmt.Sprintf(
							"%s does not load: %v", st.script.file, err,
						), also: ErrBadScript}
				}
				continue
			}
			name := st.cmd[0].raw
			v, err := rdb.Do(ctx, "COMMAND", "INFO", name).Slice()
			if err != nil {
				continue // a server without COMMAND INFO (miniredis): it answers at run time
			}
			if len(v) == 1 && v[0] == nil {
				return badField(
					fmt.Sprintf("ops.%s.steps[%d].cmd[0]", o.name, i),
					"%s: the server knows no such command", name,
				)
			}
		}
	}
	return nil
}

// recipeTTL is the lease a recipe is handed, and recipeNow the time its
// ${now_ms} says, for a lease and a virtual time: every duration a recipe
// sees goes through these two, dilated as every other target's.
func recipeTTL(on opClient, d time.Duration) time.Duration { return on.Dilate(d) }

func recipeNow(on opClient, now time.Duration) int64 { return on.At(now).UnixMilli() }

// opClient is what a recipe's ops need of the client they run for: the
// clock's conversions, the values the explorer makes in its name, the
// namespace. A client's handle (sched.Client) is one; the liveness probe,
// which runs a waiter's take at a schedule's end in its name, another
// (probeClient).
type opClient interface {
	Dilate(v time.Duration) time.Duration
	At(v time.Duration) time.Time
	NewID(kind string) string
	Prefix() string
}

// probeClient is the client a liveness probe runs a take for, at a
// schedule's end: the values it makes are those the client would have
// made next (each op of the probe makes one of each kind).
type probeClient struct {
	s  sched.Snapshot
	c  sched.ClientSnapshot
	ns string
}

func (p probeClient) Dilate(v time.Duration) time.Duration { return p.s.Dilate(v) }
func (p probeClient) At(v time.Duration) time.Time         { return p.s.At(v) }
func (p probeClient) NewID(kind string) string             { return p.c.NextID(kind) }
func (p probeClient) Prefix() string                       { return p.ns }

// recipeLocker runs a recipe for one client.
type recipeLocker struct {
	r   *recipe
	rdb redis.UniversalClient
	// c is the client's handle; nil for the liveness probe's take.
	c     *sched.Client
	key   string
	ttl   time.Duration
	owner string
	// outer is the hold taken and not yet released: a reentrant recipe's
	// second take nests in it.
	outer *recipeHeld
	// lastToken is the token of its last take, for the ops a client that
	// gives up runs (GiveUp).
	lastToken string
}

// recipeLease is what a hold (and the holds nested in it) knows of its
// lease. Guarded by its recipe's mu, but sent, which the runtime reads
// (recipeHeld.End) under its own lock.
type recipeLease struct {
	// sent is when the last acquire or extend that succeeded was sent.
	sent atomic.Int64
	// gotAt is each client's count of holds taken when the hold began.
	gotAt []int
	// seen is, for each key the hold's take or extension named, how many
	// times its lease had run out (world.keyLog) when that op ran.
	seen map[string]int
	// displacedBy, for a semaphore, names the client whose take had the
	// hold's permit once its lease ran out (recipe.displace).
	displacedBy string
}

// grant records a take, sent at sent, that named keys, with each client's
// count of holds taken as got says. The recipe's mu is held.
func (ls *recipeLease) grant(c *sched.Client, got []int, sent time.Duration, keys []string) {
	ls.sent.Store(int64(sent))
	ls.gotAt, ls.seen, ls.displacedBy = got, nil, ""
	ls.note(c, keys)
}

// note records the keys an op that granted the lease named. The recipe's
// mu is held.
func (ls *recipeLease) note(c *sched.Client, keys []string) {
	if ls.seen == nil {
		ls.seen = map[string]int{}
	}
	for _, k := range keys {
		ls.seen[k] = c.Expiries(k)
	}
}

// gots is each client's count of holds taken, in a snapshot.
func gots(s sched.Snapshot) []int {
	out := make([]int, len(s.Clients))
	for i, c := range s.Clients {
		out[i] = c.Got
	}
	return out
}

type recipeHeld struct {
	l      *recipeLocker
	write  bool
	token  string
	nested bool
	lease  *recipeLease
}

// vars is the placeholders' values for one op of a hold.
func (l *recipeLocker) vars(
	on opClient, token string, now time.Duration,
) (map[string]value, error) {
	ttl := recipeTTL(on, l.ttl)
	var ttlText string
	if l.r.seconds {
		if ttl%time.Second != 0 {
			return nil, fmt.Errorf(
				"%w: the lease %v is not whole seconds, and the recipe's ttl_unit is s",
				ErrManifest, ttl,
			)
		}
		ttlText = strconv.FormatInt(int64(ttl/time.Second), 10)
	} else {
		ttlText = strconv.FormatInt(ttl.Milliseconds(), 10)
	}
	call := on.NewID(sched.IDCall)
	return map[string]value{
		phLock: {s: l.key}, phToken: {s: token}, phClient: {s: l.owner}, phTTL: {s: ttlText},
		phNowMS: {
			s: strconv.FormatInt(recipeNow(on, now), 10),
		}, phTokenLen: {s: strconv.Itoa(len(token))},
		phCall: {s: call},
	}, nil
}

// usesNow reports whether an op reads the clock.
func (o *op) usesNow() bool {
	for _, t := range append(slices.Clone(o.keys), o.args...) {
		if t.uses(phNowMS) {
			return true
		}
	}
	for _, st := range o.steps {
		for _, t := range slices.Concat(st.cmd, st.keys, st.args) {
			if t.uses(phNowMS) {
				return true
			}
		}
		if st.cond != nil && (st.cond.a.t.uses(phNowMS) || st.cond.b.t.uses(phNowMS)) {
			return true
		}
	}
	return false
}

// commander is what an op needs of a client: scripts and commands.
type commander interface {
	redis.Scripter
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// runKeys runs op o on rdb for the hold with token; now reads the clock
// when a template needs it. It returns the op's reply (that of its
// script, or of its last step that ran or of the step its reply names;
// nil for a nil reply; a refusal, ending the op, for an error its
// refused names) and the keys the commands that ran named.
// wrote, if not nil, is called once, after the first step that may write
// (a script, or a command that writes) has answered.
func (l *recipeLocker) runKeys(
	ctx context.Context, rdb commander, on opClient, o *op, token string,
	now func() time.Duration, wrote func(),
) (any, []string, error) {
	once := func() {
		if wrote != nil {
			wrote()
			wrote = nil
		}
	}
	t := time.Duration(0)
	if o.usesNow() {
		t = now()
	}
	vars, err := l.vars(on, token, t)
	if err != nil {
		return nil, nil, err
	}
	if err := o.evalExprs(-1, vars); err != nil {
		return nil, nil, err
	}
	if o.script != nil {
		keys := make([]string, len(o.keys))
		for i, k := range o.keys {
			keys[i] = k.expand(vars).s
		}
		args := make([]any, len(o.args))
		for i, a := range o.args {
			args[i] = a.expand(vars).s
		}
		if err := outsideNS(on, o.where(-1), keys); err != nil {
			return nil, nil, err
		}
		v, err := o.sc.Run(ctx, rdb, keys, args...).Result()
		v, err = l.reply(o, -1, v, err)
		once()
		return v, keys, err
	}
	var reply any
	var named []string
	saved := map[string]any{}
	for i, st := range o.steps {
		if i > 0 && o.usesNow() {
			vars[phNowMS] = value{s: strconv.FormatInt(recipeNow(on, now()), 10)}
		}
		if err := o.evalExprs(i, vars); err != nil {
			return nil, nil, err
		}
		if st.cond != nil && !st.cond.holds(vars) {
			continue
		}
		if st.script != nil {
			keys := make([]string, len(st.keys))
			for j, k := range st.keys {
				keys[j] = k.expand(vars).s
			}
			args := make([]any, len(st.args))
			for j, a := range st.args {
				args[j] = a.expand(vars).s
			}
			if err := outsideNS(on, o.where(i), keys); err != nil {
				return nil, nil, err
			}
			named = append(named, keys...)
			v, err := st.sc.Run(ctx, rdb, keys, args...).Result()
			if v, err = l.reply(o, i, v, err); err != nil {
				return nil, nil, err
			}
			if isRefusal(v) {
				return v, named, nil
			}
			once()
			reply = v
			if st.save != "" {
				vars[st.save], saved[st.save] = valueOf(v), v
			}
			continue
		}
		args := make([]any, len(st.cmd))
		texts := make([]string, len(st.cmd))
		for j, a := range st.cmd {
			texts[j] = a.expand(vars).s
			args[j] = texts[j]
		}
		idx, _ := rediscmd.KeyIndexes(texts)
		var keys []string
		for _, j := range idx {
			keys = append(keys, texts[j])
		}
		if err := outsideNS(on, o.where(i), keys); err != nil {
			return nil, nil, err
		}
		named = append(named, commandKeys(texts)...)
		v, err := rdb.Do(ctx, args...).Result()
		if v, err = l.reply(o, i, v, err); err != nil {
			return nil, nil, err
		}
		if isRefusal(v) {
			return v, named, nil
		}
		if commandWrites(texts) {
			once()
		}
		reply = v
		if st.save != "" {
			vars[st.save], saved[st.save] = valueOf(v), v
		}
	}
	return o.opReply(reply, saved), named, nil
}

// ErrKeyOutside is returned for a command of a recipe on a key outside the
// explored namespace: one the explorer neither resets between schedules
// nor runs down with its clock, so that a search over it proves nothing.
var ErrKeyOutside = errors.New("explore: a key outside the explored namespace")

// outsideNS refuses, before it is sent, a command of op (where) on a key
// outside the namespace of on, naming the key.
func outsideNS(on opClient, where string, keys []string) error {
	id := strings.Trim(on.Prefix(), "{}:")
	for _, k := range keys {
		if !strings.Contains(k, id) {
			return fmt.Errorf(
				"%w: %s: key %q (make every key from ${lock})", ErrKeyOutside, where, k,
			)
		}
	}
	return nil
}

// reply reads a command's answer: redis.Nil is nil; a Redis error is an
// error of the target, naming the op (and step, i ≥ 0).
func (l *recipeLocker) reply(o *op, i int, v any, err error) (any, error) {
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if r, ok := o.refusedBy(err); ok {
		return r, nil
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		msg := rediscmd.Bound(err.Error(), plumbing.MaxReplyBytes)
		if l.r.strict {
			return nil, fmt.Errorf("%w: %s failed: %s", ErrConvention, o.script.file, msg)
		}
		return nil, fmt.Errorf("%s failed: %s", o.where(i), msg)
	}
	return v, err
}

// where names an op, or one of its steps (i ≥ 0), for messages.
func (o *op) where(i int) string {
	if o.script != nil {
		return fmt.Sprintf("ops.%s (%s)", o.name, filepath.Base(o.script.file))
	}
	if i < 0 {
		return "ops." + o.name
	}
	if st := o.steps[i]; st.script != nil {
		return fmt.Sprintf("ops.%s.steps[%d] (%s)", o.name, i, filepath.Base(st.script.file))
	}
	return fmt.Sprintf("ops.%s.steps[%d] (%s)", o.name, i, strings.ToUpper(o.steps[i].cmd[0].raw))
}

// valueOf is a reply as a placeholder's value: a table by its first
// element.
func valueOf(v any) value {
	switch v := firstElem(v).(type) {
	case nil:
		return value{null: true}
	case int64:
		return value{s: strconv.FormatInt(v, 10)}
	case string:
		return value{s: v}
	default:
		return value{s: fmt.Sprint(v)}
	}
}

// firstElem is a reply with every table replaced by its first element (an
// empty table by nil).
func firstElem(v any) any {
	for {
		t, ok := v.([]any)
		if !ok {
			return v
		}
		if len(t) == 0 {
			return nil
		}
		v = t[0]
	}
}

// matches reports whether reply v is one of vals.
func matches(v any, vals []okValue) bool {
	v = firstElem(v)
	for _, ok := range vals {
		switch x := v.(type) {
		case nil:
			if ok.kind == okNil {
				return true
			}
		case int64:
			if ok.kind == okInt && ok.i == x {
				return true
			}
		case string:
			if ok.kind == okStr && ok.s == x {
				return true
			}
		}
	}
	return false
}

// judge says whether a reply of op o means success; under the strict
// convention, a reply that is neither success nor refusal is an error.
// Under the strict convention a table is never 1 or 0, whatever its
// first element.
func (l *recipeLocker) judge(o *op, v any) (bool, error) {
	if t, ok := v.([]any); ok && l.r.strict && !o.anyOK {
		return false, fmt.Errorf(
			"%w: %s returned a table of %d elements (%s); want 1 or 0", ErrConvention,
			o.script.file, len(t), rediscmd.Bound(fmt.Sprint(t), plumbing.MaxReplyBytes),
		)
	}
	if o.anyOK || matches(v, o.ok) {
		return true, nil
	}
	if l.r.strict && !matches(v, o.refuse) {
		return false, fmt.Errorf(
			"%w: %s returned %s (%T); want 1 or 0", ErrConvention, o.script.file,
			rediscmd.Bound(fmt.Sprint(v), plumbing.MaxReplyBytes), v,
		)
	}
	return false, nil
}

func (l *recipeLocker) Now() time.Duration { return l.c.Elapsed() }

func (l *recipeLocker) Acquire(ctx context.Context, write bool) (sched.Held, error) {
	o := l.r.acquireOp(write)
	var token string
	nested := l.r.reentrant && l.outer != nil
	if nested {
		token = l.outer.token
	} else {
		token = l.c.NewID(sched.IDToken)
	}
	l.lastToken = token
	sent := l.Now()
	v, keys, err := l.runKeys(ctx, l.rdb, l.c, o, token, l.Now, nil)
	if err != nil {
		return nil, err
	}
	ok, err := l.judge(o, v)
	if err != nil {
		return nil, err
	}
	l.c.CountOp(o.name, replyText(v), ok)
	if !ok {
		return nil, locking.ErrNotAcquired
	}
	snap := l.c.Snapshot()
	l.r.mu.Lock()
	defer l.r.mu.Unlock()
	l.r.displace(snap, l.c.Name())
	if nested {
		// A take that succeeds grants the lease anew, nested or not: if
		// the first hold had ended meanwhile, this take began a new one.
		l.outer.lease.grant(l.c, gots(snap), sent, keys)
		return &recipeHeld{
			l:      l,
			write:  write,
			token:  token,
			nested: true,
			lease:  l.outer.lease,
		}, nil
	}
	lease := &recipeLease{}
	lease.grant(l.c, gots(snap), sent, keys)
	h := &recipeHeld{l: l, write: write, token: token, lease: lease}
	l.outer = h
	return h, nil
}

func (h *recipeHeld) Release(ctx context.Context) error {
	l := h.l
	o := l.r.releaseOp(h.write)
	if !h.nested {
		l.outer = nil
	}
	_, err := h.runHeld(ctx, o)
	return err
}

func (h *recipeHeld) Extend(ctx context.Context) error {
	l := h.l
	o := l.r.ops["extend"]
	if o == nil {
		return nil
	}
	sent := l.Now()
	keys, err := h.runHeld(ctx, o)
	if err != nil {
		return err
	}
	l.r.mu.Lock()
	h.lease.sent.Store(int64(sent))
	h.lease.note(l.c, append(keys, slices.Collect(maps.Keys(h.lease.seen))...))
	l.r.mu.Unlock()
	return nil
}

// runHeld runs op o (a release or an extension) of hold h and judges its
// reply: locking.ErrNotHeld when it says the hold was not the caller's.
// It checks the reply against the hold as it stood when o's first write
// answered (owned), and returns the keys o named.
func (h *recipeHeld) runHeld(ctx context.Context, o *op) ([]string, error) {
	l := h.l
	var at *holdState
	v, keys, err := l.runKeys(ctx, l.rdb, l.c, o, h.token, l.Now, func() { at = h.state() })
	if err != nil {
		return nil, err
	}
	ok, err := l.judge(o, v)
	if err != nil {
		return nil, err
	}
	l.c.CountOp(o.name, replyText(v), ok)
	if !ok {
		return nil, locking.ErrNotHeld
	}
	h.owned(o, v, at)
	return keys, nil
}

func (h *recipeHeld) End() time.Duration { return time.Duration(h.lease.sent.Load()) + h.l.ttl }

// holdState is what ends a hold, as it stood when an op's first write
// answered: how many times each key the hold named had run out, and each
// client's count of holds taken. What happens after that write (another
// client takes the lock the op's own write let go of) does not end the
// hold the op is about.
type holdState struct {
	expired map[string]int
	got     []int
}

// state is the hold's holdState now.
func (h *recipeHeld) state() *holdState {
	c := h.l.c
	st := &holdState{expired: map[string]int{}, got: gots(c.Snapshot())}
	h.l.r.mu.Lock()
	defer h.l.r.mu.Unlock()
	for k := range h.lease.seen {
		st.expired[k] = c.Expiries(k)
	}
	return st
}

// owned checks a release or extension answered v, a success: the hold
// must not have ended, by the lease of a key its take or last extension
// named running out since, or by another client's conflicting take since
// it began, before the op's first write answered (at; nil: now).
// Otherwise it records an ownership violation. (A read hold whose own
// lease has run out while the key lives on, lengthened by another
// reader, has not ended: the lock still keeps writers out.)
func (h *recipeHeld) owned(o *op, v any, at *holdState) {
	if o.anyOK {
		return // the reply claims nothing
	}
	if at == nil {
		at = h.state()
	}
	l := h.l
	snap := l.c.Snapshot()
	l.r.mu.Lock()
	defer l.r.mu.Unlock()
	var why string
	keys := slices.Sorted(maps.Keys(h.lease.seen))
	for _, k := range keys {
		if at.expired[k] > h.lease.seen[k] {
			why = "its lease had run out (" + l.c.Short(k) + " expired)"
			break
		}
	}
	if why == "" {
		why = h.displacedWhy()
	}
	if why == "" {
		for i, c := range snap.Clients {
			// A semaphore's take ends another's hold only by taking its
			// permit (displacedWhy).
			conflict := l.r.permits == 0 && (h.write || c.Write)
			if c.Name != l.c.Name() && conflict && i < len(h.lease.gotAt) && i < len(at.got) &&
				at.got[i] > h.lease.gotAt[i] {
				why = c.Name + " had taken the lock since"
				break
			}
		}
	}
	if why == "" {
		return
	}
	l.c.Disowned(fmt.Sprintf("%s's %s answered %s, a success, but %s's hold had ended: %s",
		l.c.Name(), o.where(-1), replyText(v), l.c.Name(), why))
}

func replyText(v any) string {
	switch v := v.(type) {
	case nil:
		return "nil"
	case refusal:
		return "error " + strconv.Quote(v.msg)
	case string:
		return strconv.Quote(v)
	case []any:
		var parts []string
		for _, x := range v {
			parts = append(parts, replyText(x))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}

// restoreKeys puts the namespace's keys and those of touched back as they
// were when kept dumped them (all without expiry).
func restoreKeys(
	ctx context.Context, e *sched.Explorer, touched []string, kept map[string]string,
) error {
	now, err := e.Redis.Keys(ctx, sched.NamespacePattern(e.KeyPrefix)).Result()
	if err != nil {
		return err
	}
	for _, k := range slices.Concat(now, touched) {
		if slices.ContainsFunc(workloadKeys, func(n string) bool { return k == e.KeyPrefix+n }) {
			continue
		}
		if err := e.Redis.Del(ctx, k).Err(); err != nil {
			return err
		}
	}
	for k, d := range kept {
		if err := e.Redis.Restore(ctx, k, 0, d).Err(); err != nil {
			return err
		}
	}
	return nil
}

// workloadKeys are the generic workload's own keys, which no recipe
// writes.
var workloadKeys = []string{sched.CounterKey, sched.ReadWriteKeyX, sched.ReadWriteKeyY}

// liveness finds a client that waits forever: a live client gave up on
// the lock, no live client holds it, some key the recipe wrote has no
// expiry, and once every lease has run out (every key with an expiry
// gone, and the clients' clock past every lease: probeTime) the client's
// take is still refused. The message names each key without expiry and
// the step that wrote it last. Each client that gave up is probed in
// turn, in the clients' order, from the same keys, until one is refused:
// the search and the replay of what it found probe alike, and the
// verdict does not depend on the clients' names (a state and its
// renamings, which the search takes as one, get the same).
func (r *recipe) liveness(
	ctx context.Context, e *sched.Explorer, snap sched.Snapshot,
) ([]result.Violation, error) {
	var waiters []sched.ClientSnapshot
	heldByLive := false
	crashed := map[string]bool{}
	for _, c := range snap.Clients {
		crashed[c.Name] = c.Crashed
		if c.Crashed {
			continue
		}
		heldByLive = heldByLive || c.Hold != nil
		if c.Wanted && c.GaveUp {
			waiters = append(waiters, c)
		}
	}
	if heldByLive || len(waiters) == 0 {
		return nil, nil
	}
	log := snap.Commands
	all, stuck, volatile, err := lockKeysLeft(ctx, e, log)
	if err != nil {
		return nil, err
	}
	if len(stuck) == 0 {
		return nil, nil
	}
	// Let every lease run out, the clients' clock past them too, and try
	// the waiter's take once more.
	at, err := probeTime(ctx, e, snap, volatile)
	if err != nil {
		return nil, err
	}
	if len(volatile) > 0 {
		if err := e.Redis.Del(ctx, volatile...).Err(); err != nil {
			return nil, err
		}
	}
	waiter, o, err := r.probe(ctx, e, snap, waiters, at, all, stuck)
	if waiter == nil || err != nil {
		return nil, err
	}
	var why []string
	for _, k := range stuck {
		why = append(why, r.blame(e, k, log, crashed))
	}
	return []result.Violation{{Property: result.Liveness, Message: fmt.Sprintf(
		"%s; nobody alive holds the lock, and %s gave up: with every lease run out (the "+
			"clients' clock at %s), its %s is still refused (it would wait forever)",
		strings.Join(why, "; "), waiter.Name, action.FormatMS(at.Milliseconds()), o.name,
	)}}, nil
}

// probe runs each waiter's take in turn, the clients' clock at at, from
// the keys left (the stuck ones restored between two waiters), until one
// is refused: that waiter, and the op refused; nil when every take
// succeeded.
func (r *recipe) probe(
	ctx context.Context, e *sched.Explorer, snap sched.Snapshot,
	waiters []sched.ClientSnapshot, at time.Duration, all, stuck []string,
) (*sched.ClientSnapshot, *op, error) {
	var kept map[string]string // the keys left, to probe the next waiter from
	if len(waiters) > 1 {
		kept = map[string]string{}
		for _, k := range stuck {
			d, err := e.Redis.Dump(ctx, k).Result()
			if err != nil {
				return nil, nil, err
			}
			kept[k] = d
		}
	}
	m := e.Model()
	for i, c := range waiters {
		l := &recipeLocker{
			r:     r,
			rdb:   e.Probe, // the recipe's code: as the clients' user
			key:   sched.LockKey(e.KeyPrefix),
			ttl:   m.LeaseOf(c.Index),
			owner: result.OwnerName(c.Name),
		}
		on := probeClient{s: snap, c: c, ns: e.KeyPrefix}
		o := r.acquireOp(c.Write)
		v, named, err := l.runKeys(
			ctx, e.Probe, on, o, on.NewID(sched.IDToken), func() time.Duration { return at }, nil,
		)
		if err != nil {
			return nil, nil, fmt.Errorf(
				"%w: client %s: probing whether its %s would ever succeed: %w",
				sched.ErrTarget, c.Name, o.name, err,
			)
		}
		ok, err := l.judge(o, v)
		if err != nil {
			return nil, nil, err
		}
		if !ok {
			return &waiters[i], o, nil
		}
		if i+1 < len(waiters) {
			if err := restoreKeys(ctx, e, slices.Concat(all, named), kept); err != nil {
				return nil, nil, err
			}
		}
	}
	return nil, nil, nil
}

// lockKeysLeft lists every key in the namespace and every key the
// recipe's commands in log named outside it (all), and among them, the
// workload's keys apart, those that never expire (stuck) and those that
// will (volatile).
func lockKeysLeft(
	ctx context.Context, e *sched.Explorer, log []sched.CmdRecord,
) (all, stuck, volatile []string, err error) {
	// Every key in the namespace, and every key the recipe named outside it.
	all, err = e.Redis.Keys(ctx, sched.NamespacePattern(e.KeyPrefix)).Result()
	if err != nil {
		return nil, nil, nil, err
	}
	for _, rec := range log {
		for _, args := range rec.Args {
			for _, k := range commandKeys(args) {
				if !slices.Contains(all, k) {
					all = append(all, k)
				}
			}
		}
	}
	sort.Strings(all)
	for _, k := range all {
		if slices.ContainsFunc(workloadKeys, func(n string) bool { return k == e.KeyPrefix+n }) {
			continue
		}
		ttl, err := e.Redis.PTTL(ctx, k).Result()
		if err != nil {
			return nil, nil, nil, err
		}
		switch {
		case ttl == -1:
			stuck = append(stuck, k)
		case ttl >= 0:
			volatile = append(volatile, k)
		}
	}
	return all, stuck, volatile, nil
}

// blame says which step left key behind: the last write to it by a
// client that crashed (its crash is why nothing cleaned it up), or else
// the last write to it.
func (r *recipe) blame(
	e *sched.Explorer, key string, log []sched.CmdRecord, crashed map[string]bool,
) string {
	short := e.Target().Short(key)
	var last, byCrashed *sched.CmdRecord
	var lastArgs, crashedArgs []string
	for i := range log {
		rec := &log[i]
		for j, args := range rec.Args {
			if !slices.Contains(commandKeys(args), key) || !commandWrites(args) ||
				j < len(rec.Errs) && rec.Errs[j] != "" ||
				j < len(rec.Values) && unchanged(args, rec.Values[j]) {
				continue
			}
			last, lastArgs = rec, args
			if crashed[rec.Client] {
				byCrashed, crashedArgs = rec, args
			}
		}
	}
	switch {
	case byCrashed != nil:
		return fmt.Sprintf(
			"%s has no expiry: %s's %s (step %d) left it, and %s crashed", short, byCrashed.Client,
			r.stepOf(crashedArgs), byCrashed.Step+1, byCrashed.Client,
		)
	case last != nil:
		return fmt.Sprintf(
			"%s has no expiry: %s's %s (step %d) left it", short, last.Client, r.stepOf(lastArgs),
			last.Step+1,
		)
	}
	return short + " has no expiry"
}

// unchanged reports whether a write command's reply says it changed
// nothing: a SETNX or SET NX that found the key, an EXPIRE or a DEL that
// found none.
func unchanged(args []string, reply string) bool {
	switch strings.ToUpper(args[0]) {
	case "SETNX",
		"HSETNX",
		"MSETNX",
		"EXPIRE",
		"PEXPIRE",
		"EXPIREAT",
		"PEXPIREAT",
		"PERSIST",
		"DEL",
		"UNLINK",
		"HDEL":
		return reply == "0" || reply == "false"
	case "SET":
		return reply == "(nil)"
	}
	return false
}

// stepOf names the op (and step) a command belongs to: its script, or
// the first step whose command has its name.
func (r *recipe) stepOf(args []string) string {
	name := strings.ToUpper(args[0])
	if (name == "EVALSHA" || name == "EVAL") && len(args) > 1 {
		for _, o := range r.sortedOps() {
			if o.sc != nil && (args[1] == o.sc.Hash() || args[1] == o.script.source) {
				return o.where(-1)
			}
			for i, st := range o.steps {
				if st.sc != nil && (args[1] == st.sc.Hash() || args[1] == st.script.source) {
					return o.where(i)
				}
			}
		}
		return "EVAL " + rediscmd.ScriptName(args[1])
	}
	for _, o := range r.sortedOps() {
		for i, st := range o.steps {
			if st.script == nil && strings.EqualFold(st.cmd[0].raw, name) {
				return o.where(i)
			}
		}
	}
	return name
}

// commandKeys is the keys a command names (a script's KEYS).
func commandKeys(args []string) []string {
	keys, _ := plumbing.Footprint([]redis.Cmder{cmdOf(args)})
	return slices.DeleteFunc(keys, func(k string) bool { return k == "*" })
}

// commandWrites reports whether a command may write.
func commandWrites(args []string) bool {
	_, w := plumbing.Footprint([]redis.Cmder{cmdOf(args)})
	return w
}

func cmdOf(args []string) redis.Cmder {
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	return redis.NewCmd(context.Background(), a...)
}
