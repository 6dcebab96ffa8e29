package goroutine

import (
	"bytes"
	"runtime"
	"strconv"
	"unsafe"
)

// Which goroutine calls. Every command a client sends, and every reading
// of its clock, asks which goroutine it comes from (world.gnum). The
// runtime names a goroutine only in its stack trace, and runtime.Stack
// walks and prints the whole stack: on the path of every command that
// cost a fifth of a search's processor time. So the id is read where the
// runtime keeps it, in the goroutine's own record (its g), found through
// the pointer each thread keeps to its goroutine (getg, in assembly, on
// amd64 and arm64). The
// field's place in the record is not assumed: it is found once, by
// reading the ids of a few fresh goroutines from their stack traces and
// keeping the one offset that holds each of them (findGoidOffset). Where the
// platform has no getg, or no single offset fits, every read falls back
// to the stack trace. The creator of a goroutine, needed only the first
// time the explorer meets it, is always read from the stack trace
// (CreatorIn).

// gScan is how far into a goroutine's record the id is looked for: the
// record is far longer, and with Go 1.26 on a 64-bit platform the id
// lies 152 bytes in.
const gScan = 256

// goidOffset is where in a goroutine's record its id lies, or -1 when
// the id must be read from the stack trace.
var goidOffset = findGoidOffset()

// ID is the calling goroutine's id.
func ID() uint64 {
	if off := goidOffset; off >= 0 {
		return *(*uint64)(unsafe.Add(getg(), off))
	}
	return stackGoid()
}

// stackGoid is the calling goroutine's id, as its stack trace shows it.
func stackGoid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		b = b[:i]
	}
	n, _ := strconv.ParseUint(string(b), 10, 64)
	return n
}

// findGoidOffset is the one offset of a goroutine's record, within
// gScan, that holds the id of each of a few fresh goroutines; -1 when
// getg is missing or the offsets that fit are not exactly one.
func findGoidOffset() int {
	if getg() == nil {
		return -1
	}
	var fits []int
	for try := range 4 {
		ch := make(chan []int)
		go func() {
			id, g := stackGoid(), getg()
			var offs []int
			for off := 0; off < gScan; off += 8 {
				if *(*uint64)(unsafe.Add(g, off)) == id {
					offs = append(offs, off)
				}
			}
			ch <- offs
		}()
		offs := <-ch
		if try == 0 {
			fits = offs
			continue
		}
		var both []int
		for _, o := range fits {
			for _, p := range offs {
				if o == p {
					both = append(both, o)
				}
			}
		}
		fits = both
	}
	if len(fits) != 1 {
		return -1
	}
	return fits[0]
}

// Self is a goroutine: its id, and its creator's (0: none named, as for
// the main goroutine, or not read yet).
type Self struct{ ID, Parent uint64 }

// WhoAmI is the calling goroutine, its creator not read: that takes its
// whole stack trace (OwnCreator), which world.gnum reads only for a
// goroutine it does not know yet.
func WhoAmI() Self { return Self{ID: ID()} }

// OwnCreator is the id of the calling goroutine's creator, from its stack
// trace (0: none named).
func OwnCreator() uint64 {
	buf := make([]byte, 4<<10)
	for {
		n := runtime.Stack(buf, false)
		if n < len(buf) {
			return CreatorIn(buf[:n])
		}
		buf = make([]byte, 2*len(buf))
	}
}

// CreatorIn is the id of the goroutine that the traceback text names as
// the creator ("created by F in goroutine N"), 0 when it names none.
func CreatorIn(text []byte) uint64 {
	i := bytes.LastIndex(text, []byte("created by "))
	if i < 0 {
		return 0
	}
	line := text[i:]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	k := bytes.LastIndex(line, []byte(" in goroutine "))
	if k < 0 {
		return 0
	}
	n, _ := strconv.ParseUint(string(line[k+len(" in goroutine "):]), 10, 64)
	return n
}
