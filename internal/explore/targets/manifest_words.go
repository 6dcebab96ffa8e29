package targets

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockmarket/lockmarket/internal/explore/action"
	"github.com/redis/go-redis/v9"
)

// The words of an op beyond its calls and its ok, and the op a client
// runs when it stops waiting:
//
//   - "refused": [{"error": PREFIX}, ...]: a Redis error whose message
//     begins with PREFIX is a refusal, not an error of the recipe (a
//     library that refuses by raising a script error);
//   - "reply": NAME: the op's reply is that of the step that saved NAME,
//     not that of its last step;
//   - "unheld": true: a client that gives up runs this release or extend
//     too, holding nothing; it must neither free nor extend another's
//     hold;
//   - ops.give_up: what a client runs when it stops waiting (a fair
//     lock's clean-up of its place in the queue).
//
// Placeholders may add and subtract: ${now_ms+ttl}, ${ttl-100}.
const (
	wordRefused = "refused"
	wordReply   = "reply"
	wordUnheld  = "unheld"
	opGiveUp    = "give_up"
)

// The limits of the words: the terms of one placeholder's arithmetic,
// and the refusals of one op.
const (
	// MaxExprTerms is the most terms a placeholder's arithmetic may have.
	MaxExprTerms = 8
	// MaxRefusals is the most error prefixes an op's refused may list.
	MaxRefusals = 16
)

// expr is a placeholder's arithmetic: terms added or subtracted, in turn.
type expr struct{ terms []term }

// term is one operand: a placeholder (name), or a whole number (lit).
type term struct {
	neg  bool
	name string
	lit  int64
}

// numericPlaceholders are the built-in placeholders that are numbers;
// saved replies may be too, which is told when they are read.
var numericPlaceholders = []string{phTTL, phNowMS, phTokenLen}

var exprTermRE = regexp.MustCompile(`^(?:[A-Za-z_][A-Za-z0-9_]*|[0-9]+)`)

// isExpr reports whether a placeholder's text is arithmetic, or meant as
// such: no name has an operator.
func isExpr(s string) bool { return strings.ContainsAny(s, "+-*/%") }

// parseExpr reads the arithmetic s of a placeholder (field): names among
// known and whole numbers, joined by + or -.
func parseExpr(field, s string, known []string) (*expr, error) {
	bad := func(why string, a ...any) error {
		return badField(field, "${%s}: %s", s, fmt.Sprintf(why, a...))
	}
	e := &expr{}
	rest, neg := s, false
	for {
		m := exprTermRE.FindString(rest)
		if m == "" {
			return nil, bad("want placeholders and whole numbers joined by + or -, " +
				"as ${now_ms+ttl} or ${ttl-100}")
		}
		t := term{neg: neg}
		if m[0] >= '0' && m[0] <= '9' {
			n, err := strconv.ParseInt(m, 10, 64)
			if err != nil {
				return nil, bad("%s is larger than the limit of %d", m, int64(math.MaxInt64))
			}
			t.lit = n
		} else {
			switch {
			case !slices.Contains(known, m):
				return nil, bad("unknown placeholder ${%s} (known here: %s)", m,
					placeholderList(known))
			case slices.Contains(builtinPlaceholders, m) &&
				!slices.Contains(numericPlaceholders, m):
				return nil, bad("${%s} is not a number (numbers are %s and saved replies)", m,
					placeholderList(numericPlaceholders))
			}
			t.name = m
		}
		e.terms = append(e.terms, t)
		if len(e.terms) > MaxExprTerms {
			return nil, bad("more than the limit of %d terms", MaxExprTerms)
		}
		rest = rest[len(m):]
		if rest == "" {
			break
		}
		switch rest[0] {
		case '+':
			neg = false
		case '-':
			neg = true
		default:
			return nil, bad("%q: want + or - between terms", rest[:1])
		}
		rest = rest[1:]
	}
	if !slices.ContainsFunc(e.terms, func(t term) bool { return t.name != "" }) {
		return nil, bad("no placeholder: write the number itself")
	}
	return e, nil
}

// uses reports whether the arithmetic names placeholder name.
func (e *expr) uses(name string) bool {
	return e != nil && slices.ContainsFunc(e.terms, func(t term) bool { return t.name == name })
}

// saved reports whether the arithmetic names a saved reply.
func (e *expr) saved() bool {
	return slices.ContainsFunc(e.terms, func(t term) bool {
		return t.name != "" && !slices.Contains(builtinPlaceholders, t.name)
	})
}

// eval is the arithmetic's value over vars: an error for a nil or a value
// that is not a whole number, or a result past int64.
func (e *expr) eval(vars map[string]value) (int64, error) {
	var sum int64
	for _, t := range e.terms {
		v := t.lit
		if t.name != "" {
			x, ok := vars[t.name]
			if !ok || x.null {
				return 0, fmt.Errorf("${%s} is nil", t.name)
			}
			n, err := strconv.ParseInt(x.s, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("${%s} is %q, not a whole number", t.name, x.s)
			}
			v = n
		}
		if t.neg {
			if v == math.MinInt64 {
				return 0, errors.New("the result is past the 64-bit integers")
			}
			v = -v
		}
		s := sum + v
		if v > 0 && s < sum || v < 0 && s > sum {
			return 0, errors.New("the result is past the 64-bit integers")
		}
		sum = s
	}
	return sum, nil
}

// evalExprs sets in vars the value of every placeholder's arithmetic that
// step i of o (or o's script, i < 0) uses, under the placeholder's text.
func (o *op) evalExprs(i int, vars map[string]value) error {
	var ts []tmpl
	switch {
	case i < 0 && o.script != nil:
		ts = slices.Concat(o.keys, o.args)
	case i >= 0:
		st := o.steps[i]
		ts = slices.Concat(st.cmd, st.keys, st.args)
		if st.cond != nil {
			ts = append(ts, st.cond.a.t, st.cond.b.t)
		}
	}
	for _, t := range ts {
		for _, p := range t.parts {
			if p.expr == nil {
				continue
			}
			n, err := p.expr.eval(vars)
			if err != nil {
				return fmt.Errorf("%s: ${%s}: %v", o.where(i), p.name, err)
			}
			vars[p.name] = value{s: strconv.FormatInt(n, 10)}
		}
	}
	return nil
}

// parseGiveUpOK reads the ok of a give_up op (field), whose reply is
// never judged: none, or "any".
func parseGiveUpOK(field string, obj *object, o *op) error {
	o.anyOK = true
	if !obj.has("ok") {
		return nil
	}
	var word string
	if strictUnmarshal(obj.fields["ok"], &word) == nil && word == "any" {
		return nil
	}
	return badField(join(field, "ok"),
		"give_up's reply is not judged (its client has stopped waiting): leave ok out, "+
			"or write \"any\"")
}

// parseOpWords reads an op's refused, reply and unheld (field).
func parseOpWords(field string, obj *object, o *op) error {
	if o.name == opGiveUp && (obj.has(wordRefused) || obj.has(wordReply)) {
		return badField(field, "give_up's reply is not judged: it takes no refused or reply")
	}
	if err := parseRefused(field, obj, o); err != nil {
		return err
	}
	if obj.has(wordReply) {
		f := join(field, wordReply)
		name, err := obj.str(wordReply, "")
		if err != nil {
			return err
		}
		if o.script != nil {
			return badField(f, "goes with steps: a script's reply is the op's")
		}
		var saves []string
		for _, st := range o.steps {
			if st.save != "" && !slices.Contains(saves, st.save) {
				saves = append(saves, st.save)
			}
		}
		if !slices.Contains(saves, name) {
			return badField(f, "%q: no step saves it (saved: %s)", name, orNone(saves))
		}
		o.replyFrom = name
	}
	unheld, err := obj.boolean(wordUnheld)
	if err != nil {
		return err
	}
	if unheld && !strings.HasSuffix(o.name, "release") && o.name != "extend" {
		return badField(join(field, wordUnheld),
			"is for a release or an extend that a client runs holding nothing, not an %s",
			o.name)
	}
	o.unheld = unheld
	return nil
}

func orNone(l []string) string {
	if len(l) == 0 {
		return "none"
	}
	return strings.Join(l, ", ")
}

// parseRefused reads an op's refused (field): a list of {"error": PREFIX}.
func parseRefused(field string, obj *object, o *op) error {
	if !obj.has(wordRefused) {
		return nil
	}
	f := join(field, wordRefused)
	l, err := obj.list(wordRefused)
	if err != nil || len(l) == 0 {
		return badField(f, "want a list of the errors that mean refused, as "+
			"[{\"error\": \"LOCK_NOT_OWNED\"}]")
	}
	if len(l) > MaxRefusals {
		return badField(f, "%d refusals, more than the limit of %d", len(l), MaxRefusals)
	}
	if o.anyOK {
		return badField(f, "goes with a list of ok replies: with \"ok\": \"any\" every reply "+
			"counts as done")
	}
	for i, raw := range l {
		ef := fmt.Sprintf("%s[%d]", f, i)
		eo, err := readObject(ef, raw, "error")
		if err != nil {
			return err
		}
		p, err := eo.str("error", "")
		if err != nil {
			return err
		}
		if strings.TrimSpace(p) == "" {
			return badField(join(ef, "error"), "empty: want the beginning of the error's "+
				"message, as the server sends it (\"ERROR\", \"NOT_OWNER\")")
		}
		o.refused = append(o.refused, p)
	}
	return nil
}

// refusal is a Redis error that an op's refused names: the op's reply,
// meaning refused.
type refusal struct{ msg string }

func isRefusal(v any) bool {
	_, ok := v.(refusal)
	return ok
}

// refusedBy reports whether err is a Redis error that o's refused names.
func (o *op) refusedBy(err error) (refusal, bool) {
	var rerr redis.Error
	if len(o.refused) == 0 || !errors.As(err, &rerr) {
		return refusal{}, false
	}
	msg := rerr.Error()
	for _, p := range o.refused {
		if strings.HasPrefix(msg, p) {
			return refusal{msg: msg}, true
		}
	}
	return refusal{}, false
}

// opReply is the reply of o, whose last step that ran answered last:
// with reply, that of the step that saved its name (nil if none ran).
func (o *op) opReply(last any, saved map[string]any) any {
	if o.replyFrom == "" {
		return last
	}
	return saved[o.replyFrom]
}

// GiveUp is what the client runs when it stops waiting for the lock: the
// recipe's give_up, then each op marked unheld (the extend, then the
// release of its kind), all with the token of its refused take.
func (l *recipeLocker) GiveUp(ctx context.Context, write bool) error {
	if o := l.r.ops[opGiveUp]; o != nil {
		v, _, err := l.runKeys(ctx, l.rdb, l.c, o, l.lastToken, l.Now, nil)
		if err != nil {
			return err
		}
		l.c.CountOp(o.name, replyText(v), true)
	}
	for _, o := range []*op{l.r.ops["extend"], l.r.releaseOp(write)} {
		if o != nil && o.unheld {
			if err := l.runUnheld(ctx, o); err != nil {
				return err
			}
		}
	}
	return nil
}

// runUnheld runs o, a release or an extend, for a client that holds
// nothing, and records an ownership violation when it answers a success
// or when it deleted, changed or moved the expiry of the lock's key while
// another client held it.
func (l *recipeLocker) runUnheld(ctx context.Context, o *op) error {
	before, err := l.lockState(ctx)
	if err != nil {
		return err
	}
	v, _, err := l.runKeys(ctx, l.rdb, l.c, o, l.lastToken, l.Now, nil)
	if err != nil {
		return err
	}
	ok, err := l.judge(o, v)
	if err != nil {
		return err
	}
	after, err := l.lockState(ctx)
	if err != nil {
		return err
	}
	l.c.CountOp(o.name, replyText(v), ok)
	name := l.c.Name()
	var why string
	if ok && !o.anyOK {
		why = fmt.Sprintf("%s's %s answered %s, a success, but %s held nothing (its take "+
			"was refused)", name, o.where(-1), replyText(v), name)
	} else if did := l.changed(before, after); did != "" {
		why = fmt.Sprintf("%s's %s, run holding nothing (its take was refused), %s",
			name, o.where(-1), did)
	}
	if why != "" {
		l.c.Disowned(why)
	}
	return nil
}

// lockState is the lock's key and its holders at one moment of a client's
// run, when nothing else moves.
type lockState struct {
	at      time.Duration  // the virtual time
	logged  int            // the writes to the key so far (Client.KeyLog)
	holders map[string]int // the other clients that hold, with their count of holds
	exists  bool
	dump    string
	pttl    time.Duration // dilated; -1 for no expiry
}

// lockState reads the lock's key through the scheduler's own connection.
func (l *recipeLocker) lockState(ctx context.Context) (*lockState, error) {
	var dump *redis.StringCmd
	var pttl *redis.DurationCmd
	if err := l.c.SettleLeases(ctx); err != nil {
		return nil, err
	}
	_, err := l.c.Control().Pipelined(ctx, func(p redis.Pipeliner) error {
		dump = p.Dump(ctx, l.key)
		pttl = p.PTTL(ctx, l.key)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("reading %s: %w", l.key, err)
	}
	st := &lockState{holders: map[string]int{}, pttl: pttl.Val()}
	st.dump, err = dump.Result()
	st.exists = err == nil
	snap := l.c.Snapshot()
	st.at, st.logged = snap.Now, len(l.c.KeyLog(l.key))
	for _, c := range snap.Clients {
		if c.Name != l.c.Name() && c.Hold != nil {
			st.holders[c.Name] = c.Got
		}
	}
	return st, nil
}

// changed says what the client's op, between before and after, did to
// another client's hold of the lock's key, or "": only a hold that stood
// throughout counts, and only a key that no one else wrote, and whose
// lease did not run out, in between.
func (l *recipeLocker) changed(before, after *lockState) string {
	var holder string
	names := make([]string, 0, len(before.holders))
	for name := range before.holders {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if got, ok := after.holders[name]; ok && got == before.holders[name] {
			holder = name
			break
		}
	}
	log := l.c.KeyLog(l.key)
	if holder == "" || !before.exists || after.logged > len(log) {
		return ""
	}
	for _, e := range log[before.logged:after.logged] {
		if !strings.HasPrefix(e, l.c.Name()+" ") {
			return ""
		}
	}
	key := l.c.Short(l.key)
	end := func(st *lockState) time.Duration {
		if st.pttl < 0 {
			return -1
		}
		return st.at + l.c.Undilate(st.pttl)
	}
	b, a := end(before), end(after)
	switch {
	case !after.exists:
		return "deleted " + key + ", which " + holder + " held"
	case before.dump != after.dump:
		return "changed " + key + ", which " + holder + " held"
	case b != a && (b < 0 || a < 0 || max(a-b, b-a) > time.Millisecond):
		return fmt.Sprintf("moved the end of %s's lease, which %s held, from %s to %s", key,
			holder, leaseEnd(b), leaseEnd(a))
	}
	return ""
}

func leaseEnd(d time.Duration) string {
	if d < 0 {
		return "never"
	}
	return action.FormatMS(d.Milliseconds())
}
