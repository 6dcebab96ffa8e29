package search

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
)

// Explored is the part of the state graph a shard explored, as it
// explored it: each part dealt to the shard (Shard), by its place in the
// split's order, and, for a subtree, every decision the shard's depth-first
// search took there, in that order, with the state it was at, the sleep
// set it had and what the search did: cut the run there (the state cache
// had the state), ended it (every child asleep), or went on into its
// children; then where each run ended. Recount runs the whole search's
// depth-first search over the shards' records with one state cache, and
// counts what the whole search counts.
//
// A shard records its part only when it searches it on one system (one
// worker), with the state cache on and DPOR off, and only while the
// record stays within MaxExplored bytes.
type Explored[K comparable] struct {
	// Units is how many parts the split dealt, to every shard.
	Units int `json:"units"`
	// Nodes is how many decisions and ends the record holds.
	Nodes int `json:"nodes"`
	// Keys is the choices the sleep sets name (as the cache names them,
	// renamed under a symmetry), each once: Data refers to them by index.
	Keys []K `json:"keys"`
	// Data is the record, compressed (DEFLATE): the states' fingerprints
	// (their first 16 bytes), then the parts with their decisions, as
	// varints.
	Data []byte `json:"data"`
}

// MaxExplored bounds a shard's record before compression: the states'
// fingerprints (16 bytes each) and its decisions (a few bytes each). A
// shard whose record outgrows it keeps none, and its merge counts what
// the shards ran instead of what the whole search would run.
const MaxExplored = 24 << 20

// The kinds of a record's nodes.
const (
	nodeEnd  byte = iota // a run ended complete
	nodeStop             // a run ended short (a part that ended above the split)
	nodeCut              // a decision whose state the cache had: the run ended there
	nodeOpen             // a decision whose state the cache took, then its children
	nodeBare             // a decision with no state looked up, then its children
)

// ErrRecount is wrapped by Recount's errors: records that are not the
// parts of one search, each once, or a record that is not one.
var ErrRecount = errors.New("search: cannot recount")

// PartError is an error of Recount about one of its parts.
type PartError struct {
	// Part is the index of the part among Recount's.
	Part int
	Err  error
}

func (e *PartError) Error() string { return fmt.Sprintf("part %d: %v", e.Part, e.Err) }

func (e *PartError) Unwrap() error { return e.Err }

// stateID is the part of a state's fingerprint a record keeps: its first
// 128 bits. Two of a search's states agree there by chance with a
// probability below n²/2¹²⁹ for n states (under 10⁻²⁰ for a billion).
type stateID [16]byte

// recorder writes a shard's record (Explored) as its search runs.
type recorder[K comparable] struct {
	units  int
	keys   map[K]uint64
	keyOf  []K
	fps    map[stateID]uint64
	fpOf   []stateID
	buf    []byte
	nodes  int
	mark   int  // where the run under way began in buf, to undo it
	marked int  // nodes then
	ended  bool // the run under way ended at a decision
	// pending is the state and sleep set of the decision under way.
	pending   bool
	fp        uint64
	sleep     []uint64
	dropped   bool // the record outgrew MaxExplored, or a run diverged
	remaining int  // the bytes left within MaxExplored
}

func newRecorder[K comparable](units int) *recorder[K] {
	return &recorder[K]{units: units, keys: map[K]uint64{}, fps: map[stateID]uint64{},
		remaining: MaxExplored}
}

func (r *recorder[K]) off() bool { return r == nil || r.dropped }

// drop gives the record up.
func (r *recorder[K]) drop() {
	*r = recorder[K]{dropped: true}
}

// unit begins part index of the split.
func (r *recorder[K]) unit(index int) {
	if r.off() {
		return
	}
	r.buf = binary.AppendUvarint(r.buf, uint64(index))
	r.begin()
}

// begin marks the start of a run.
func (r *recorder[K]) begin() {
	r.mark, r.marked, r.ended, r.pending = len(r.buf), r.nodes, false, false
}

// state notes the state fp of the decision under way, and its sleep set
// as the cache names it.
func (r *recorder[K]) state(fp Fingerprint, sleep []K) {
	if r.off() {
		return
	}
	sid := stateID(fp[:len(stateID{})])
	id, ok := r.fps[sid]
	if !ok {
		id = uint64(len(r.fpOf))
		r.fps[sid] = id
		r.fpOf = append(r.fpOf, sid)
		r.remaining -= len(sid)
	}
	r.pending, r.fp, r.sleep = true, id, r.sleep[:0]
	for _, k := range sleep {
		kid, ok := r.keys[k]
		if !ok {
			kid = uint64(len(r.keyOf))
			r.keys[k] = kid
			r.keyOf = append(r.keyOf, k)
		}
		r.sleep = append(r.sleep, kid)
	}
}

// cut records that the decision under way found its state in the cache.
func (r *recorder[K]) cut() {
	if r.off() {
		return
	}
	r.node(nodeCut, 0)
	r.ended = true
}

// decision records the decision under way, with awake children to
// search; with none, the run ends there.
func (r *recorder[K]) decision(awake int) {
	if r.off() {
		return
	}
	kind := nodeBare
	if r.pending {
		kind = nodeOpen
	}
	r.node(kind, awake)
	r.ended = awake == 0
}

// node appends a node of kind, with the pending state for nodeCut and
// nodeOpen, and awake for nodeOpen and nodeBare.
func (r *recorder[K]) node(kind byte, awake int) {
	n := len(r.buf)
	r.buf = append(r.buf, kind)
	if kind == nodeCut || kind == nodeOpen {
		r.buf = binary.AppendUvarint(r.buf, r.fp)
		r.buf = binary.AppendUvarint(r.buf, uint64(len(r.sleep)))
		for _, k := range r.sleep {
			r.buf = binary.AppendUvarint(r.buf, k)
		}
	}
	if kind == nodeOpen || kind == nodeBare {
		r.buf = binary.AppendUvarint(r.buf, uint64(awake))
	}
	r.pending = false
	r.nodes++
	if r.remaining -= len(r.buf) - n; r.remaining < 0 {
		r.drop()
	}
}

// settled records the end of a run that ended with err (a run that did
// not end at a decision ends complete or not).
func (r *recorder[K]) settled(complete bool, err error) {
	switch {
	case r.off():
		return
	case err != nil:
		r.drop() // a replay diverged: the part is not searched
		return
	case !r.ended:
		r.end(complete)
	}
	r.begin()
}

// end records a run's end, complete or not.
func (r *recorder[K]) end(complete bool) {
	if r.off() {
		return
	}
	kind := nodeStop
	if complete {
		kind = nodeEnd
	}
	r.node(kind, 0)
}

// undo forgets the run under way (a void run, to be run again).
func (r *recorder[K]) undo() {
	if r.off() {
		return
	}
	r.buf, r.nodes = r.buf[:r.mark], r.marked
	r.ended, r.pending = false, false
}

// explored is the record, or nil when it was given up.
func (r *recorder[K]) explored() (*Explored[K], error) {
	if r.off() {
		return nil, nil
	}
	var b bytes.Buffer
	z, err := flate.NewWriter(&b, flate.BestCompression)
	if err != nil {
		return nil, err
	}
	head := binary.AppendUvarint(nil, uint64(len(r.fpOf)))
	for _, fp := range r.fpOf {
		head = append(head, fp[:]...)
	}
	if _, err := z.Write(head); err != nil {
		return nil, err
	}
	if _, err := z.Write(r.buf); err != nil {
		return nil, err
	}
	if err := z.Close(); err != nil {
		return nil, err
	}
	return &Explored[K]{Units: r.units, Nodes: r.nodes, Keys: slices.Clone(r.keyOf),
		Data: b.Bytes()}, nil
}

// gnode is a node of a record, read: its state and sleep set as Recount
// names them across the parts.
type gnode struct {
	kind  byte
	fp    int
	sleep []int
	awake int
}

// span is a part of the split in a record: its nodes.
type span struct {
	part  int
	nodes []gnode
}

// Recount counts the complete and the cut runs of the whole search whose
// shards recorded parts (Explored): it runs the whole search's depth-first
// search over their records, part after part in the split's order, with
// one state cache, as the whole search would. A shard's record holds at
// least what the whole search explores in the shard's parts (docs/
// explorer.md argues why); a decision the whole search goes on from and
// the shard cut is an error.
func Recount[K comparable](parts []*Explored[K]) (Stats, error) {
	if len(parts) == 0 {
		return Stats{}, fmt.Errorf("%w: no part", ErrRecount)
	}
	keys := map[K]int{}
	fps := map[stateID]int{}
	units := make([]*span, parts[0].Units)
	for i, p := range parts {
		if p.Units != parts[0].Units {
			return Stats{}, &PartError{i, fmt.Errorf("%w: %d parts in its split, part 0 %d",
				ErrRecount, p.Units, parts[0].Units)}
		}
		spans, err := decode(p, keys, fps)
		if err != nil {
			return Stats{}, &PartError{i, fmt.Errorf("%w: %w", ErrRecount, err)}
		}
		for u, s := range spans {
			if units[u] != nil {
				return Stats{}, &PartError{i, fmt.Errorf("%w: part %d of the split is "+
					"also part %d's", ErrRecount, u, units[u].part)}
			}
			s.part = i
			units[u] = s
		}
	}
	var st Stats
	cache := map[int][][]int{}
	for u, s := range units {
		if s == nil {
			return Stats{}, fmt.Errorf("%w: no part has part %d of the split", ErrRecount, u)
		}
		if err := replay(s.nodes, cache, &st); err != nil {
			return Stats{}, &PartError{s.part, fmt.Errorf("%w: part %d of the split: %w",
				ErrRecount, u, err)}
		}
	}
	return st, nil
}

// replay runs the whole search's depth-first search over one part's
// nodes, with cache, and counts its runs into st.
func replay(nodes []gnode, cache map[int][][]int, st *Stats) error {
	type frame struct {
		left  int
		count bool // the whole search reaches these children
	}
	hit := func(n gnode) bool {
		return slices.ContainsFunc(cache[n.fp], func(z []int) bool {
			return !slices.ContainsFunc(z, func(k int) bool { return !slices.Contains(n.sleep, k) })
		})
	}
	stack := []frame{{left: 1, count: true}}
	for _, n := range nodes {
		for len(stack) > 0 && stack[len(stack)-1].left == 0 {
			stack = stack[:len(stack)-1]
		}
		if len(stack) == 0 {
			return errors.New("nodes past the end of the part")
		}
		top := &stack[len(stack)-1]
		top.left--
		count := top.count
		switch {
		case !count:
		case n.kind == nodeEnd:
			st.Schedules++
		case n.kind == nodeStop:
			st.Pruned++
		case n.kind == nodeCut && !hit(n):
			return fmt.Errorf("the shard cut a state at depth %d below the split that "+
				"the whole search goes on from", len(stack)-1)
		case n.kind == nodeCut:
			st.Pruned++
		case n.kind == nodeOpen && hit(n):
			st.Pruned++
			count = false
		case n.kind == nodeOpen:
			cache[n.fp] = append(cache[n.fp], n.sleep)
		}
		if n.kind == nodeOpen || n.kind == nodeBare {
			if n.awake == 0 && count {
				st.Pruned++
			}
			stack = append(stack, frame{left: n.awake, count: count})
		}
	}
	return nil
}

// maxUnits bounds a record's parts, and maxAwake a decision's children.
const (
	maxUnits = 1 << 24
	maxAwake = 1 << 16
)

// decode reads a record's parts, naming its states and keys by their
// indexes in fps and keys (adding those they lack).
func decode[K comparable](p *Explored[K], keys map[K]int, fps map[stateID]int) (
	map[int]*span, error,
) {
	if p.Units < 0 || p.Units > maxUnits {
		return nil, fmt.Errorf("%d parts in its split", p.Units)
	}
	raw, err := io.ReadAll(io.LimitReader(flate.NewReader(bytes.NewReader(p.Data)),
		MaxExplored+1))
	if err != nil {
		return nil, fmt.Errorf("its record does not read: %w", err)
	}
	if len(raw) > MaxExplored {
		return nil, fmt.Errorf("its record is larger than %d bytes", MaxExplored)
	}
	d := &decoder{b: raw}
	keyIDs := make([]int, len(p.Keys))
	for i, k := range p.Keys {
		id, ok := keys[k]
		if !ok {
			id = len(keys)
			keys[k] = id
		}
		keyIDs[i] = id
	}
	nfp := d.uint(len(raw) / len(stateID{}))
	fpIDs := make([]int, nfp)
	for i := range fpIDs {
		var fp stateID
		copy(fp[:], d.bytes(len(fp)))
		id, ok := fps[fp]
		if !ok {
			id = len(fps)
			fps[fp] = id
		}
		fpIDs[i] = id
	}
	spans := map[int]*span{}
	for d.err == nil && len(d.b) > 0 {
		u := d.uint(p.Units - 1)
		if _, ok := spans[u]; ok && d.err == nil {
			d.err = fmt.Errorf("part %d of the split twice", u)
		}
		s := &span{}
		spans[u] = s
		for left := 1; left > 0 && d.err == nil; left-- {
			n := d.node(keyIDs, fpIDs)
			s.nodes = append(s.nodes, n)
			left += n.awake
		}
	}
	if d.err != nil {
		return nil, fmt.Errorf("its record does not read: %w", d.err)
	}
	return spans, nil
}

// decoder reads a record's varints; its first error sticks.
type decoder struct {
	b   []byte
	err error
}

// uint reads a varint no larger than most.
func (d *decoder) uint(most int) int {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	switch {
	case n <= 0:
		d.err = errors.New("a number cut short")
		return 0
	case most < 0 || v > uint64(most):
		d.err = fmt.Errorf("%d: out of range (at most %d)", v, most)
		return 0
	}
	d.b = d.b[n:]
	return int(v)
}

// bytes reads n bytes.
func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return make([]byte, n)
	}
	if len(d.b) < n {
		d.err = errors.New("cut short")
		return make([]byte, n)
	}
	b := d.b[:n]
	d.b = d.b[n:]
	return b
}

// id reads an index into ids, and returns what it names there.
func (d *decoder) id(ids []int) int {
	i := d.uint(len(ids) - 1)
	if d.err != nil {
		return 0
	}
	return ids[i]
}

// node reads a node, naming its keys and state by keyIDs and fpIDs.
func (d *decoder) node(keyIDs, fpIDs []int) gnode {
	var n gnode
	kind := d.bytes(1)[0]
	if kind > nodeBare {
		if d.err == nil {
			d.err = fmt.Errorf("no kind of node %d", kind)
		}
		return n
	}
	n.kind = kind
	if kind == nodeCut || kind == nodeOpen {
		n.fp = d.id(fpIDs)
		m := d.uint(len(keyIDs))
		for range m {
			n.sleep = append(n.sleep, d.id(keyIDs))
		}
	}
	if kind == nodeOpen || kind == nodeBare {
		n.awake = d.uint(maxAwake)
	}
	return n
}
