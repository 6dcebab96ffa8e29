package exploresession

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/lockmarket/lockmarket/internal/explore/sched"
	"github.com/lockmarket/lockmarket/internal/explore/targets"
	"github.com/lockmarket/lockmarket/internal/service/api"
	"github.com/yuin/gopher-lua/parse"
)

// MaxScriptBytes bounds each script's source of a lock given as Lua (a
// session's request). The scripts run on the session's sandbox, which
// bounds their time and memory (sandbox.go).
const MaxScriptBytes = 4 << 10

// refused are the names a lock's script has no use for and that reach
// past Redis's data in some Lua: a script that names one is refused before
// it runs. Redis's own Lua, in the sandbox, has none of them but load and
// loadstring, and a name built at run time passes this check: the
// sandbox is the wall, this only says early and plainly what is not for
// a lock's script.
var refused = map[string]bool{"loadfile": true, "dofile": true, "load": true, "loadstring": true, "require": true,
	"package": true, "module": true, "setfenv": true, "getfenv": true, "debug": true, "io": true, "os": true,
	"newproxy": true, "string.dump": true, "_G": true}

// luaTarget is the target of a lock given as Lua: each script parsed
// (one that does not parse is refused with the parser's message) and
// bounded.
func luaTarget(l *api.LuaLock) (*sched.Target, error) {
	given := map[string]string{"acquire": l.Acquire, "release": l.Release, "extend": l.Extend,
		"read_acquire": l.ReadAcquire, "read_release": l.ReadRelease, "write_acquire": l.WriteAcquire,
		"write_release": l.WriteRelease}
	var names []string
	for name, src := range given {
		if src != "" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return nil, api.Invalidf("lua: give acquire and release (extend optional), or read_acquire, read_release, " +
			"write_acquire and write_release")
	}
	scripts := map[string]targets.Script{}
	for _, name := range names {
		src := given[name]
		if len(src) > MaxScriptBytes {
			return nil, api.Invalidf("lua.%s: %d bytes, at most %d", name, len(src), MaxScriptBytes)
		}
		if err := check(name, src); err != nil {
			return nil, err
		}
		scripts[name] = targets.Script{Name: name + ".lua", Source: src}
	}
	tg, err := targets.Lua(targets.LuaRecipe{Acquire: scripts["acquire"], Release: scripts["release"],
		Extend: scripts["extend"], ReadAcquire: scripts["read_acquire"], ReadRelease: scripts["read_release"],
		WriteAcquire: scripts["write_acquire"], WriteRelease: scripts["write_release"]})
	if err != nil {
		// explore.Lua names its command line's flags; the API's fields
		// are the same names.
		msg := strings.NewReplacer("-read-acquire", "read_acquire", "-read-release", "read_release",
			"-write-acquire", "write_acquire", "-write-release", "write_release", "-acquire", "acquire",
			"-release", "release", "-extend", "extend").Replace(err.Error())
		return nil, api.Invalidf("lua: %s", msg)
	}
	return tg, nil
}

// check refuses a script that does not parse, with the parser's message,
// or that names one of the refused names (a global, not a field).
func check(name, src string) error {
	if _, err := parse.Parse(strings.NewReader(src), name); err != nil {
		return api.Invalidf("lua.%s does not parse: %s", name, strings.Join(strings.Fields(err.Error()), " "))
	}
	sc := parse.NewScanner(strings.NewReader(src), name)
	lx := &parse.Lexer{}
	var prev, prev2 int
	var prevStr string
	for {
		tok, err := sc.Scan(lx)
		if err != nil || tok.Type < 0 {
			return nil
		}
		lx.PrevTokenType = tok.Type
		word := ""
		switch {
		case tok.Type == parse.TIdent && prev != '.' && prev != ':':
			word = tok.Str
		case tok.Type == parse.TIdent && prev == '.' && prev2 == parse.TIdent:
			word = prevStr + "." + tok.Str
		}
		if refused[word] {
			return api.Invalidf("lua.%s line %d: %s is not for a lock's script, which reads and writes its keys "+
				"with redis.call only; refused", name, tok.Pos.Line, word)
		}
		if tok.Type == parse.TIdent {
			prevStr = tok.Str
		}
		prev2, prev = prev, tok.Type
	}
}

// scriptStopped turns the error of a step or a search whose script
// failed (a bound of the sandbox included) or answered outside the
// convention into a refusal of the request with its message; other
// errors are left as they are.
func scriptStopped(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, targets.ErrConvention) || errors.Is(err, targets.ErrBadScript) {
		msg := err.Error()
		switch {
		case strings.Contains(msg, "not enough memory"):
			msg += fmt.Sprintf(" (the sandbox's bound: %d MiB of Lua heap)", SandboxHeap>>20)
		case strings.Contains(msg, "OOM command not allowed"):
			msg += fmt.Sprintf(" (the sandbox's bound: maxmemory %d MiB)", SandboxMaxMemory>>20)
		}
		return api.Invalidf("%s", bounded(msg))
	}
	return err
}
