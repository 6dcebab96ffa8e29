package targets

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/redis/rediscmd"
	"github.com/redis/go-redis/v9"
)

// ManifestFile is the name of a recipe directory's manifest.
const ManifestFile = "recipe.json"

// ErrManifest is returned for a recipe manifest that cannot be used: bad
// JSON, an unknown op, field or placeholder, a bad ok list, a missing
// script. Its message is one line that names the field, as in
// "recipe.json: ops.release.steps[1].if: unknown placeholder ${tokn}".
var ErrManifest = errors.New("explore: bad recipe manifest")

// manifestError is an ErrManifest naming a field.
type manifestError struct {
	field, msg string
	also       error // another sentinel it wraps (ErrBadScript), if any
}

func (e *manifestError) Error() string {
	if e.field == "" {
		return ManifestFile + ": " + e.msg
	}
	return ManifestFile + ": " + e.field + ": " + e.msg
}

func (e *manifestError) Unwrap() []error {
	if e.also != nil {
		return []error{ErrManifest, e.also}
	}
	return []error{ErrManifest}
}

func badField(field, format string, a ...any) error {
	return &manifestError{field: field, msg: fmt.Sprintf(format, a...)}
}

// The kinds of lock a manifest describes, and their ops.
const (
	lockMutex  = "mutex"
	lockRWLock = "rwlock"
)

var (
	mutexOps  = []string{"acquire", "release", "extend", opGiveUp}
	rwlockOps = []string{
		"read_acquire", "read_release", "write_acquire", "write_release", "extend", opGiveUp,
	}
)

// The placeholders every template may use; a step's saved replies add
// their names.
const (
	phLock     = "lock"
	phToken    = "token"
	phClient   = "client"
	phTTL      = "ttl"
	phNowMS    = "now_ms"
	phTokenLen = "token_len"
	phCall     = "call"
)

var builtinPlaceholders = []string{phLock, phToken, phClient, phTTL, phNowMS, phTokenLen, phCall}

// recipe is a parsed and checked manifest.
type recipe struct {
	// mu guards the leases of the recipe's holds (recipeLease).
	mu        sync.Mutex
	name      string
	rw        bool
	seconds   bool // ttl_unit "s"
	reentrant bool
	ops       map[string]*op
	// strict is the flags' convention (Lua): an answer other than the
	// success and refusal values is an error (ErrConvention), not a
	// refusal.
	strict bool
	// checks is the properties a recipe checks unless told otherwise.
	checks []string
	// permits is a semaphore's number of permits; 0 for any other lock.
	permits int
}

// op is one operation of a recipe: one script, or steps sent one round
// trip at a time.
type op struct {
	name   string // "acquire", "read_release", ...
	script *scriptRef
	sc     *redis.Script // the script, once the recipe is a target
	keys   []tmpl
	args   []tmpl
	steps  []*opStep
	ok     []okValue
	refuse []okValue // strict only: the answers that mean refused
	// anyOK is "ok": "any": a release or extension whose reply tells its
	// caller nothing (it returns nothing, or its answer is ignored): every
	// reply counts as done, and ownership does not judge it.
	anyOK bool
	// refused is "refused": the prefixes of the Redis errors that mean
	// refused (manifest_words.go).
	refused []string
	// replyFrom is "reply": the save whose reply is the op's.
	replyFrom string
	// unheld is "unheld": a client that gives up runs the op too,
	// holding nothing.
	unheld bool
}

type scriptRef struct {
	file   string // as the manifest names it
	source string
}

// opStep is one round trip of an op: a command (cmd), or a script
// (script, keys, args) run with one EVALSHA.
type opStep struct {
	cmd    []tmpl
	script *scriptRef
	sc     *redis.Script // the script, once the recipe is a target
	keys   []tmpl
	args   []tmpl
	save   string
	cond   *cond
}

// cond is a step's "if": eq or ne of two operands, or nil of one.
type cond struct {
	kind string
	a, b operand
}

// operand is a template, or JSON null.
type operand struct {
	null bool
	t    tmpl
}

// okValue is one reply meaning success: an integer, a string, or nil.
type okValue struct {
	kind int // okNil, okInt, okStr
	i    int64
	s    string
}

const (
	okNil = iota
	okInt
	okStr
)

func (v okValue) String() string {
	switch v.kind {
	case okInt:
		return strconv.FormatInt(v.i, 10)
	case okStr:
		return strconv.Quote(v.s)
	}
	return "null"
}

// tmpl is a string with placeholders: literal parts and names, in turn.
type tmpl struct {
	raw   string
	parts []tmplPart
}

type tmplPart struct {
	lit  string
	name string // a placeholder when lit is ""
	expr *expr  // the placeholder's arithmetic (${now_ms+ttl}), if any
}

var placeholderRE = regexp.MustCompile(`\$\{([^}]*)\}`)

var saveNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// parseTmpl reads a template whose placeholders must be among known.
func parseTmpl(field, s string, known []string) (tmpl, error) {
	t := tmpl{raw: s}
	rest := s
	for {
		loc := placeholderRE.FindStringSubmatchIndex(rest)
		if loc == nil {
			if strings.Contains(rest, "${") {
				return t, badField(field, "unterminated placeholder in %q", s)
			}
			if rest != "" {
				t.parts = append(t.parts, tmplPart{lit: rest})
			}
			return t, nil
		}
		if pre := rest[:loc[0]]; pre != "" {
			if strings.Contains(pre, "${") {
				return t, badField(field, "unterminated placeholder in %q", s)
			}
			t.parts = append(t.parts, tmplPart{lit: pre})
		}
		name := rest[loc[2]:loc[3]]
		if isExpr(name) {
			e, err := parseExpr(field, name, known)
			if err != nil {
				return t, err
			}
			t.parts = append(t.parts, tmplPart{name: name, expr: e})
			rest = rest[loc[1]:]
			continue
		}
		if !slices.Contains(known, name) {
			return t, badField(
				field, "unknown placeholder ${%s} (known here: %s)", name, placeholderList(known),
			)
		}
		t.parts = append(t.parts, tmplPart{name: name})
		rest = rest[loc[1]:]
	}
}

func placeholderList(known []string) string {
	var out []string
	for _, k := range known {
		out = append(out, "${"+k+"}")
	}
	return strings.Join(out, ", ")
}

// value is a placeholder's value: a string, or nil (a saved nil reply,
// or the save of a step that did not run).
type value struct {
	null bool
	s    string
}

// expand is the template with its placeholders replaced. A template that
// is one placeholder alone keeps its value's nil; inside a longer string
// nil stands as "".
func (t tmpl) expand(vars map[string]value) value {
	if len(t.parts) == 1 && t.parts[0].lit == "" {
		v, ok := vars[t.parts[0].name]
		if !ok {
			return value{null: true}
		}
		return v
	}
	var b strings.Builder
	for _, p := range t.parts {
		if p.lit != "" || p.name == "" {
			b.WriteString(p.lit)
			continue
		}
		b.WriteString(vars[p.name].s)
	}
	return value{s: b.String()}
}

// uses reports whether the template names placeholder name.
func (t tmpl) uses(name string) bool {
	return slices.ContainsFunc(
		t.parts,
		func(p tmplPart) bool { return p.lit == "" && (p.name == name || p.expr.uses(name)) },
	)
}

// object is a JSON object whose fields are checked: known names only
// (besides comments), each read once.
type object struct {
	field  string
	fields map[string]json.RawMessage
}

// commentFields may stand anywhere, and are ignored.
var commentFields = []string{"comment", "description", "note", "notes"}

func readObject(field string, raw json.RawMessage, known ...string) (*object, error) {
	var m map[string]json.RawMessage
	if err := strictUnmarshal(raw, &m); err != nil || m == nil {
		return nil, badField(field, "want a JSON object")
	}
	for k := range m {
		if !slices.Contains(known, k) && !slices.Contains(commentFields, k) &&
			!strings.HasPrefix(k, "_") {
			return nil, badField(
				join(field, k), "unknown field (known: %s)", strings.Join(known, ", "),
			)
		}
	}
	return &object{field: field, fields: m}, nil
}

func join(field, name string) string {
	if field == "" {
		return name
	}
	return field + "." + name
}

func (o *object) has(name string) bool {
	v, ok := o.fields[name]
	return ok && string(bytes.TrimSpace(v)) != "null"
}

func (o *object) str(name, def string) (string, error) {
	if !o.has(name) {
		return def, nil
	}
	var s string
	if err := strictUnmarshal(o.fields[name], &s); err != nil {
		return "", badField(join(o.field, name), "want a string")
	}
	return s, nil
}

func (o *object) boolean(name string) (bool, error) {
	if !o.has(name) {
		return false, nil
	}
	var b bool
	if err := strictUnmarshal(o.fields[name], &b); err != nil {
		return false, badField(join(o.field, name), "want true or false")
	}
	return b, nil
}

func (o *object) list(name string) ([]json.RawMessage, error) {
	if !o.has(name) {
		return nil, nil
	}
	var l []json.RawMessage
	if err := strictUnmarshal(o.fields[name], &l); err != nil {
		return nil, badField(join(o.field, name), "want a JSON array")
	}
	return l, nil
}

func strictUnmarshal(raw json.RawMessage, v any) error {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	return d.Decode(v)
}

// scalarString reads a JSON string or number as text: command arguments
// and script arguments may be either.
func scalarString(field string, raw json.RawMessage) (string, error) {
	var v any
	if err := strictUnmarshal(raw, &v); err != nil {
		return "", badField(field, "want a string or a number")
	}
	switch v := v.(type) {
	case string:
		return v, nil
	case json.Number:
		return v.String(), nil
	}
	return "", badField(field, "want a string or a number, not %s", strings.TrimSpace(string(raw)))
}

// parseOK reads an ok list: JSON integers, strings and null.
func parseOK(field string, raws []json.RawMessage) ([]okValue, error) {
	if len(raws) == 0 {
		return nil, badField(
			field,
			"want a non-empty list of the replies that mean success (numbers, strings, null)",
		)
	}
	var out []okValue
	for i, raw := range raws {
		f := fmt.Sprintf("%s[%d]", field, i)
		var v any
		if err := strictUnmarshal(raw, &v); err != nil {
			return nil, badField(f, "not JSON")
		}
		switch v := v.(type) {
		case nil:
			out = append(out, okValue{kind: okNil})
		case string:
			out = append(out, okValue{kind: okStr, s: v})
		case json.Number:
			n, err := v.Int64()
			if err != nil {
				f, ferr := v.Float64()
				if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
					return nil, badField(field+fmt.Sprintf("[%d]", i), "%s: Redis replies with "+
						"integers (Lua truncates its numbers)", v)
				}
				n = int64(f)
			}
			out = append(out, okValue{kind: okInt, i: n})
		case bool:
			return nil, badField(f, "%v: a script's true reaches the client as 1 and false as "+
				"nil: write 1 or null", v)
		default:
			return nil, badField(f, "%s: want a number, a string or null (a table reply matches "+
				"by its first element)",
				strings.TrimSpace(string(raw)))
		}
	}
	return out, nil
}

// LoadRecipe reads a recipe directory: DIR/recipe.json (the manifest)
// and the scripts it names, and returns its target. The manifest says
// how each operation of the lock is called:
//
//	{"name": "my lock", "lock": "mutex", "ttl_unit": "ms", "reentrant": false,
//	 "ops": {
//	   "acquire": {"script": "acquire.lua", "keys": ["${lock}"],
//	     "args": ["${ttl}", "${token}"], "ok": [null]},
//	   "release": {"steps": [
//	     {"cmd": ["GET", "${lock}"], "save": "v"},
//	     {"cmd": ["DEL", "${lock}"], "if": {"eq": ["${v}", "${token}"]}}], "ok": [1]}}}
//
// lock is mutex (ops acquire, release, optional extend) or rwlock (ops
// read_acquire, read_release, write_acquire, write_release, optional
// extend). An op is one script (one EVALSHA) or steps, each one command
// sent in its own round trip, which the explorer may interleave with
// other clients' commands; a step may save its reply under a name and
// run only if a condition (eq, ne of two values, nil of one) holds. The
// op's reply is that of its last step that ran. ok lists the replies
// that mean success (a table matches by its first element); any other
// reply means refused (not released, not extended), and a Redis error
// is an error of the target. Placeholders may stand inside longer
// strings: ${lock}, ${token} (this hold's owner value), ${client} (the
// client's stable name), ${ttl} (the lease in ttl_unit, ms or s),
// ${now_ms} (the client's clock), ${token_len}, ${call} (an id made
// afresh for each call of an op, as locks that make one per release do),
// and ${NAME} for a reply an earlier step of the same op saved. The
// tokens and call ids are the same in every run of a schedule, so a key
// named after one is too. With reentrant, the workload
// takes the lock twice, nested, with the same ${client} and ${token}, and
// releases it twice.
//
// An op may also list the errors that mean refused ("refused"), take its
// reply from a named step ("reply"), or be run by a client that gives up
// holding nothing ("unheld"); a placeholder may add and subtract
// (${now_ms+ttl}); a give_up op runs when a client stops waiting. See
// docs/explorer.md.
//
// An error (wrapping ErrManifest) names the field at fault.
func LoadRecipe(dir string) (*sched.Target, error) {
	r, err := readRecipe(dir)
	if err != nil {
		return nil, err
	}
	return r.target(), nil
}

// The limits on what a recipe directory may hold: a manifest, or a script,
// larger than its limit is refused before it is read, as is an op of more
// steps than MaxOpSteps.
const (
	// MaxManifestBytes is the largest recipe.json read.
	MaxManifestBytes = 1 << 20
	// MaxScriptBytes is the largest Lua file read.
	MaxScriptBytes = 1 << 20
	// MaxOpSteps is the most steps an op may have.
	MaxOpSteps = 64
)

// ErrFile is returned for a file that is not read: not a regular file
// (a FIFO, a device, a directory), outside the recipe's directory once
// its links are followed, or over its size limit. Its message names the
// file and the limit.
var ErrFile = errors.New("explore: file not read")

// fileError is an ErrFile whose message is its own.
type fileError struct{ msg string }

func (e *fileError) Error() string { return e.msg }

func (e *fileError) Unwrap() error { return ErrFile }

func badFile(format string, a ...any) error { return &fileError{fmt.Sprintf(format, a...)} }

func readRecipe(dir string) (*recipe, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &manifestError{msg: fmt.Sprintf("no %s in %s", ManifestFile, dir)}
		}
		return nil, &manifestError{msg: err.Error()}
	}
	if root, err = filepath.Abs(root); err != nil {
		return nil, &manifestError{msg: err.Error()}
	}
	b, err := readInside(root, ManifestFile, "manifest", MaxManifestBytes)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &manifestError{msg: fmt.Sprintf("no %s in %s", ManifestFile, dir)}
		}
		me := &manifestError{msg: err.Error()}
		if errors.Is(err, ErrFile) {
			me.also = ErrFile
		}
		return nil, me
	}
	return parseRecipe(b, filepath.Base(filepath.Clean(dir)), func(name string) (string, error) {
		src, err := readInside(root, name, "script", MaxScriptBytes)
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("no file %s", filepath.Join(dir, name))
		}
		return string(src), err
	})
}

// readInside reads file name of directory root (absolute, its links
// followed): a regular file that, its links followed too, lies inside
// root, of at most limit bytes (what names the limit). A FIFO or a device
// is refused before it is opened, and opened without blocking, so that
// one swapped in meanwhile cannot hang the read either.
func readInside(root, name, what string, limit int64) ([]byte, error) {
	if filepath.IsAbs(name) || !filepath.IsLocal(name) {
		return nil, badFile(
			"%s: not a file in the recipe's directory (give a path relative to it, without ..)",
			name,
		)
	}
	p, err := filepath.EvalSymlinks(filepath.Join(root, name))
	if err != nil {
		return nil, err
	}
	if rel, err := filepath.Rel(root, p); err != nil || !filepath.IsLocal(rel) {
		return nil, badFile("%s leads to %s, outside the recipe's directory", name, p)
	}
	return readRegular(p, name, what, limit)
}

// ReadScript reads a Lua file named on the command line: a regular file
// of at most MaxScriptBytes (ErrFile otherwise).
func ReadScript(path string) (string, error) {
	b, err := readRegular(path, path, "script", MaxScriptBytes)
	return string(b), err
}

// readRegular reads path (shown as name), a regular file of at most limit
// bytes.
func readRegular(path, name, what string, limit int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := regular(fi, name, what, limit); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := regular(fi, name, what, limit); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, tooBig(name, what, limit)
	}
	return b, nil
}

// regular refuses a file that is not regular, or larger than limit.
func regular(fi os.FileInfo, name, what string, limit int64) error {
	if !fi.Mode().IsRegular() {
		return badFile("%s is not a regular file (%s)", name, fileKind(fi.Mode()))
	}
	if fi.Size() > limit {
		return tooBig(name, what, limit)
	}
	return nil
}

func tooBig(name, what string, limit int64) error {
	return badFile("%s is larger than the limit of %d KiB for a %s", name, limit>>10, what)
}

// fileKind names the kind of a file that is not regular.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// parseRecipe reads a manifest; read returns a script file's source.
func parseRecipe(b []byte, defName string, read func(string) (string, error)) (*recipe, error) {
	var syntax *json.SyntaxError
	var raw json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		if errors.As(err, &syntax) {
			line := 1 + bytes.Count(b[:min(int(syntax.Offset), len(b))], []byte("\n"))
			return nil, &manifestError{msg: fmt.Sprintf("not JSON: line %d: %v", line, err)}
		}
		return nil, &manifestError{msg: "not JSON: " + err.Error()}
	}
	top, err := readObject("", raw, "name", "lock", "ttl_unit", "reentrant", "permits", "ops")
	if err != nil {
		return nil, err
	}
	r := &recipe{ops: map[string]*op{}, checks: slices.Clone(recipeChecks)}
	if r.name, err = top.str("name", defName); err != nil {
		return nil, err
	}
	lock, err := top.str("lock", lockMutex)
	if err != nil {
		return nil, err
	}
	switch lock {
	case lockMutex, lockSemaphore:
	case lockRWLock:
		r.rw = true
	default:
		return nil, badField("lock", "%q: want mutex, rwlock or semaphore", lock)
	}
	if r.permits, err = readPermits(top, lock); err != nil {
		return nil, err
	}
	unit, err := top.str("ttl_unit", "ms")
	if err != nil {
		return nil, err
	}
	switch unit {
	case "ms":
	case "s":
		r.seconds = true
	default:
		return nil, badField("ttl_unit", "%q: want ms or s", unit)
	}
	if r.reentrant, err = top.boolean("reentrant"); err != nil {
		return nil, err
	}
	if !top.has("ops") {
		return nil, badField("ops", "missing: the lock's operations")
	}
	allowed := mutexOps
	if r.rw {
		allowed = rwlockOps
	}
	ops, err := readObject("ops", top.fields["ops"], allowed...)
	if err != nil {
		var me *manifestError
		if errors.As(err, &me) && strings.HasSuffix(me.msg, ")") &&
			strings.HasPrefix(me.msg, "unknown field") {
			me.msg = fmt.Sprintf(
				"unknown op (a%s %s has %s)", map[bool]string{true: "n", false: ""}[r.rw], lock,
				strings.Join(allowed, ", "),
			)
		}
		return nil, err
	}
	names := make([]string, 0, len(ops.fields))
	for k := range ops.fields {
		if slices.Contains(allowed, k) {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		o, err := parseOp("ops."+name, name, ops.fields[name], read)
		if err != nil {
			return nil, err
		}
		r.ops[name] = o
	}
	for _, need := range allowed {
		if need != "extend" && need != opGiveUp && r.ops[need] == nil {
			return nil, badField(
				"ops."+need,
				"missing: a%s %s needs %s",
				map[bool]string{true: "n", false: ""}[r.rw],
				lock,
				strings.Join(
					slices.DeleteFunc(
						slices.Clone(allowed),
						func(s string) bool { return s == "extend" || s == opGiveUp },
					),
					", ",
				),
			)
		}
	}
	return r, nil
}

// blocked names the commands a step may not send: a transaction across
// round trips (its effect lands at EXEC, which names no key), a blocking
// command (it would hold the server's connection past the scheduler), a
// subscription.
var blocked = map[string]string{
	"MULTI": "a transaction", "EXEC": "a transaction", "DISCARD": "a transaction", "WATCH": "a " +
		"transaction",
	"UNWATCH": "a transaction", "BLPOP": "a blocking command", "BRPOP": "a blocking command",
	"BLMOVE": "a blocking command", "BRPOPLPUSH": "a blocking command", "BZPOPMIN": "a blocking " +
		"command",
	"BZPOPMAX": "a blocking command", "BLMPOP": "a blocking command", "BZMPOP": "a blocking " +
		"command",
	"WAIT": "a blocking command", "XREAD": "a blocking command", "XREADGROUP": "a blocking command",
	"SUBSCRIBE": "a subscription", "PSUBSCRIBE": "a subscription", "SSUBSCRIBE": "a subscription",
	"MONITOR": "a subscription", "FLUSHALL": "a command on every key", "FLUSHDB": "a command on " +
		"every key",
	"SELECT": "a change of database", "QUIT": "the end of the connection", "RESET": "the end of " +
		"the connection",
}

// parseOp reads op name of a manifest (field): a script, or steps sent one
// round trip at a time, and the replies that mean success.
func parseOp(
	field, name string, raw json.RawMessage, read func(string) (string, error),
) (*op, error) {
	obj, err := readObject(
		field, raw, "script", "keys", "args", "steps", "ok", wordRefused, wordReply, wordUnheld,
	)
	if err != nil {
		return nil, err
	}
	o := &op{name: name}
	switch {
	case obj.has("script") && obj.has("steps"):
		return nil, badField(field, "give script or steps, not both")
	case !obj.has("script") && !obj.has("steps"):
		return nil, badField(
			field,
			"give script (one EVALSHA) or steps (commands one round trip at a time)",
		)
	}
	if err := parseOpOK(field, obj, o); err != nil {
		return nil, err
	}
	if obj.has("script") {
		o.script, o.keys, o.args, err = parseScript(field, obj, read, builtinPlaceholders)
		if err != nil {
			return nil, err
		}
		return o, parseOpWords(field, obj, o)
	}
	for _, k := range []string{"keys", "args"} {
		if obj.has(k) {
			return nil, badField(join(field, k), "goes with script; a step names its keys in cmd")
		}
	}
	if o.steps, err = parseSteps(field, obj, read); err != nil {
		return nil, err
	}
	return o, parseOpWords(field, obj, o)
}

// parseOpOK reads the "ok" of op o (field): a list of the replies that
// mean success, or "any" for a release or extension whose reply says
// nothing.
func parseOpOK(field string, obj *object, o *op) error {
	if o.name == opGiveUp {
		return parseGiveUpOK(field, obj, o)
	}
	if !obj.has("ok") {
		return badField(join(field, "ok"), "missing: the replies that mean success")
	}
	var word string
	if strictUnmarshal(obj.fields["ok"], &word) == nil {
		if word != "any" {
			return badField(
				join(field, "ok"), "%q: want a list of the replies that mean success, or \"any\"",
				word,
			)
		}
		if !strings.HasSuffix(o.name, "release") && o.name != "extend" {
			return badField(
				join(field, "ok"),
				"\"any\" is for a release or extend whose reply says nothing; "+
					"an %s must say whether it took the lock",
				o.name,
			)
		}
		o.anyOK = true
		return nil
	}
	oks, err := obj.list("ok")
	if err != nil {
		return badField(
			join(field, "ok"),
			"want a list of the replies that mean success, or \"any\"",
		)
	}
	o.ok, err = parseOK(join(field, "ok"), oks)
	return err
}

// parseSteps reads the steps of an op (field), in order: each may use the
// placeholders the steps before it saved.
func parseSteps(field string, obj *object, read func(string) (string, error)) ([]*opStep, error) {
	steps, err := obj.list("steps")
	if err != nil {
		return nil, err
	}
	if len(steps) == 0 {
		return nil, badField(join(field, "steps"), "empty: want at least one step")
	}
	if len(steps) > MaxOpSteps {
		return nil, badField(
			join(field, "steps"), "%d steps, more than the limit of %d steps per op", len(steps),
			MaxOpSteps,
		)
	}
	known := slices.Clone(builtinPlaceholders)
	var out []*opStep
	for i, raw := range steps {
		var st *opStep
		st, known, err = parseStep(fmt.Sprintf("%s.steps[%d]", field, i), raw, read, known)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// parseStep reads one step (field f): its condition, its command or
// script, and what it saves. known are the placeholders it may use; it
// returns them with its own saves added.
func parseStep(
	f string, raw json.RawMessage, read func(string) (string, error), known []string,
) (*opStep, []string, error) {
	so, err := readObject(f, raw, "cmd", "script", "keys", "args", "save", "if")
	if err != nil {
		return nil, nil, err
	}
	st := &opStep{}
	// The condition sees the saves of earlier steps only.
	if so.has("if") {
		if st.cond, err = parseCond(join(f, "if"), so.fields["if"], known); err != nil {
			return nil, nil, err
		}
	}
	switch {
	case so.has("script") && so.has("cmd"):
		return nil, nil, badField(f, "give cmd or script, not both")
	case so.has("script"):
		if st.script, st.keys, st.args, err = parseScript(f, so, read, known); err != nil {
			return nil, nil, err
		}
	case so.has("keys") || so.has("args"):
		return nil, nil, badField(
			f,
			"keys and args go with script; a command names its keys in cmd",
		)
	}
	if st.script == nil {
		if st.cmd, err = parseStepCmd(f, so, known); err != nil {
			return nil, nil, err
		}
	}
	if st.save, known, err = parseSave(f, so, known); err != nil {
		return nil, nil, err
	}
	return st, known, nil
}

// parseStepCmd reads a step's command (field f): a command name a step may
// send, then its arguments, templates over the placeholders known.
func parseStepCmd(f string, so *object, known []string) ([]tmpl, error) {
	cmd, err := so.list("cmd")
	if err != nil {
		return nil, err
	}
	if len(cmd) == 0 {
		return nil, badField(
			join(f, "cmd"),
			"missing: want the command and its arguments, as [\"GET\", \"${lock}\"], "+
				"or a script (\"script\": FILE, with keys and args)",
		)
	}
	var out []tmpl
	for j, raw := range cmd {
		cf := fmt.Sprintf("%s.cmd[%d]", f, j)
		s, err := scalarString(cf, raw)
		if err != nil {
			return nil, err
		}
		t, err := parseTmpl(cf, s, known)
		if err != nil {
			return nil, err
		}
		if j == 0 {
			if err := checkStepCommand(cf, s, t); err != nil {
				return nil, err
			}
		}
		out = append(out, t)
	}
	raws := make([]string, len(out))
	for i, t := range out {
		raws[i] = t.raw
	}
	idx, ok := rediscmd.KeyIndexes(raws)
	if !ok {
		return nil, badField(fmt.Sprintf("%s.cmd[1]", f), "want the number of keys that follow")
	}
	for _, i := range idx {
		if err := checkKey(fmt.Sprintf("%s.cmd[%d]", f, i), out[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkStepCommand refuses a command name (field cf) that is a
// placeholder, that steps cannot send, or that runs a script.
func checkStepCommand(cf, s string, t tmpl) error {
	if len(t.parts) != 1 || t.parts[0].lit == "" {
		return badField(cf, "%q: want a command name, not a placeholder", s)
	}
	name := strings.ToUpper(s)
	if why, ok := blocked[name]; ok {
		return badField(cf, "%s is %s, which steps cannot send (use a script)", name, why)
	}
	if name == "EVAL" || name == "EVALSHA" || name == "FCALL" {
		return badField(
			cf,
			"%s in a step: give the step a script instead (\"script\": FILE, with keys and args)",
			name,
		)
	}
	if !rediscmd.DataCommand(name) {
		return badField(
			cf,
			"%s is not a data command: a step may send only commands on keys (GET, SET, DEL, "+
				"PEXPIRE, HSET, ... ; see docs/explorer.md), never one that changes the server",
			name,
		)
	}
	return nil
}

// checkKey refuses a key template (field f) not made from ${lock}: every
// key an op names must lie in the namespace the explorer resets and runs
// the clock down in. A key made from a saved reply is checked when it is
// sent.
func checkKey(f string, t tmpl) error {
	for _, p := range t.parts {
		if p.expr != nil {
			if p.expr.saved() {
				return nil
			}
			continue
		}
		if p.lit == "" && (p.name == phLock || !slices.Contains(builtinPlaceholders, p.name)) {
			return nil
		}
	}
	return badField(
		f,
		"key %q is not made from ${lock}: every key an op names must be in the explored "+
			"namespace, as \"${lock}\" or \"${lock}:owner\" are",
		t.raw,
	)
}

// parseScript reads the script of an op or a step (field): its file,
// read from the recipe's directory, and its keys and args, templates over
// the placeholders known there.
func parseScript(
	field string, obj *object, read func(string) (string, error), known []string,
) (*scriptRef, []tmpl, []tmpl, error) {
	file, err := obj.str("script", "")
	if err != nil {
		return nil, nil, nil, err
	}
	if file == "" {
		return nil, nil, nil, badField(
			join(field, "script"),
			"empty: want a Lua file in the recipe's directory",
		)
	}
	src, err := read(file)
	if err != nil {
		return nil, nil, nil, badField(join(field, "script"), "%v", err)
	}
	var keys, args []tmpl
	for _, part := range []struct {
		name string
		into *[]tmpl
	}{{"keys", &keys}, {"args", &args}} {
		l, err := obj.list(part.name)
		if err != nil {
			return nil, nil, nil, err
		}
		for i, raw := range l {
			f := fmt.Sprintf("%s.%s[%d]", field, part.name, i)
			s, err := scalarString(f, raw)
			if err != nil {
				return nil, nil, nil, err
			}
			if part.name == "keys" && s == "" {
				return nil, nil, nil, badField(f, "empty key")
			}
			t, err := parseTmpl(f, s, known)
			if err != nil {
				return nil, nil, nil, err
			}
			if part.name == "keys" {
				if err := checkKey(f, t); err != nil {
					return nil, nil, nil, err
				}
			}
			*part.into = append(*part.into, t)
		}
	}
	return &scriptRef{file: file, source: src}, keys, args, nil
}

// parseSave reads a step's save, and returns the placeholders known to
// the steps after it.
func parseSave(field string, so *object, known []string) (string, []string, error) {
	if !so.has("save") {
		return "", known, nil
	}
	save, err := so.str("save", "")
	if err != nil {
		return "", nil, err
	}
	switch {
	case !saveNameRE.MatchString(save):
		return "", nil, badField(
			join(field, "save"), "%q: want a name of letters, digits and _", save,
		)
	case slices.Contains(builtinPlaceholders, save):
		return "", nil, badField(join(field, "save"), "%q is a placeholder of its own", save)
	}
	if !slices.Contains(known, save) {
		known = append(known, save)
	}
	return save, known, nil
}

func parseCond(field string, raw json.RawMessage, known []string) (*cond, error) {
	obj, err := readObject(field, raw, "eq", "ne", "nil")
	if err != nil {
		return nil, err
	}
	var kinds []string
	for _, k := range []string{"eq", "ne", "nil"} {
		if _, ok := obj.fields[k]; ok {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) != 1 {
		return nil, badField(field, "want exactly one of eq, ne, nil")
	}
	c := &cond{kind: kinds[0]}
	raw = obj.fields[c.kind]
	var l []json.RawMessage
	if c.kind == "nil" {
		if err := strictUnmarshal(raw, &l); err != nil {
			l = []json.RawMessage{raw}
		}
		if len(l) != 1 {
			return nil, badField(join(field, "nil"), "want one value")
		}
	} else if err := strictUnmarshal(raw, &l); err != nil || len(l) != 2 {
		return nil, badField(join(field, c.kind), "want two values, as [\"${v}\", \"${token}\"]")
	}
	ops := make([]operand, len(l))
	for i, r := range l {
		if strings.TrimSpace(string(r)) == "null" {
			ops[i] = operand{null: true}
			continue
		}
		s, err := scalarString(field, r)
		if err != nil {
			return nil, err
		}
		if ops[i].t, err = parseTmpl(field, s, known); err != nil {
			return nil, err
		}
	}
	c.a = ops[0]
	if len(ops) > 1 {
		c.b = ops[1]
	}
	return c, nil
}

// holds reports whether the condition holds over vars.
func (c *cond) holds(vars map[string]value) bool {
	a := c.a.eval(vars)
	if c.kind == "nil" {
		return a.null
	}
	b := c.b.eval(vars)
	eq := a.null == b.null && (a.null || a.s == b.s)
	if c.kind == "eq" {
		return eq
	}
	return !eq
}

func (o operand) eval(vars map[string]value) value {
	if o.null {
		return value{null: true}
	}
	return o.t.expand(vars)
}
