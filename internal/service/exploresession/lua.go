package exploresession

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/yuin/gopher-lua/parse"

	"github.com/lockmarket/lockmarket/explore"
	"github.com/lockmarket/lockmarket/internal/service/api"
)

// Bounds of a lock given as Lua (a session's request). The scripts run on
// the session's embedded server, whose Lua interpreter cannot be stopped
// from outside while a script runs: so each script is bounded from inside.
// Before it is loaded, a count is added at the top of every loop's body
// (while, for, repeat), of every function's body and before every goto,
// and a script that reaches MaxScriptTurns in one run stops with an error
// that names the bound. A lock's script takes a few turns; a script that
// loops forever stops at its bound, and its session's step or
// search answers with the message.
const (
	// MaxScriptBytes bounds each script's source.
	MaxScriptBytes = 4 << 10
	// MaxScriptTurns bounds the loop turns and function calls of one run
	// of a script.
	MaxScriptTurns = 10_000
	// MaxStringBytes bounds what string.rep may make.
	MaxStringBytes = 1 << 20
)

// stopMark starts the error a bounded script stops with.
const stopMark = "lockmarket: script stopped"

// luaTarget is the target of a lock given as Lua: each script parsed
// (one that does not parse is refused with the parser's message) and
// bounded.
func luaTarget(l *api.LuaLock) (*explore.Target, error) {
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
	scripts := map[string]explore.Script{}
	for _, name := range names {
		src := given[name]
		if len(src) > MaxScriptBytes {
			return nil, api.Invalidf("lua.%s: %d bytes, at most %d", name, len(src), MaxScriptBytes)
		}
		b, err := bound(name, src)
		if err != nil {
			return nil, api.Invalidf("lua.%s does not parse: %s", name, strings.Join(strings.Fields(err.Error()), " "))
		}
		scripts[name] = explore.Script{Name: name + ".lua", Source: b}
	}
	tg, err := explore.Lua(explore.LuaRecipe{Acquire: scripts["acquire"], Release: scripts["release"],
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

// bound is src with a count of its turns: a prologue on its first line
// (so that the parser's and Redis's line numbers stay the user's) and a
// call of the count where each loop turn, function call and goto begins.
// It fails with the parser's error for a script that does not parse.
func bound(name, src string) (string, error) {
	if _, err := parse.Parse(strings.NewReader(src), name); err != nil {
		return "", err
	}
	lines := strings.SplitAfter(src, "\n")
	// offset of the start of each line, in bytes
	starts := make([]int, len(lines)+1)
	for i, l := range lines {
		starts[i+1] = starts[i] + len(l)
	}
	const tick = " __lm_turn() "
	var ins []int
	sc := parse.NewScanner(strings.NewReader(src), name)
	lx := &parse.Lexer{}
	inParams := false
	for {
		tok, err := sc.Scan(lx)
		if err != nil {
			return "", err
		}
		if tok.Type < 0 {
			break
		}
		lx.PrevTokenType = tok.Type
		if tok.Pos.Line < 1 || tok.Pos.Line > len(lines) {
			return "", fmt.Errorf("line %d out of the script", tok.Pos.Line)
		}
		at := starts[tok.Pos.Line-1] + tok.Pos.Column - 1
		switch {
		case tok.Type == parse.TDo || tok.Type == parse.TRepeat:
			ins = append(ins, at+len(tok.Str))
		case tok.Type == parse.TFunction:
			inParams = true
		case inParams && tok.Type == ')':
			inParams = false
			ins = append(ins, at+1)
		case tok.Type == parse.TGoto:
			ins = append(ins, at)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "local __lm_turns = 0 local function __lm_turn() __lm_turns = __lm_turns + 1 "+
		"if __lm_turns > %d then error(%q, 0) end end "+
		"local string = setmetatable({rep = function(s, n, ...) "+
		"if type(n) == 'number' and n * #tostring(s) > %d then error(%q, 0) end return string.rep(s, n, ...) end}, "+
		"{__index = string}) ",
		MaxScriptTurns, fmt.Sprintf("%s after %d loop turns and function calls in %s: a loop that never ends? "+
			"(the bound keeps the service responsive)", stopMark, MaxScriptTurns, name),
		MaxStringBytes, fmt.Sprintf("%s in %s: string.rep of more than %d bytes", stopMark, name, MaxStringBytes))
	last := 0
	for _, at := range ins {
		if at < last || at > len(src) {
			return "", errors.New("the script could not be bounded")
		}
		b.WriteString(src[last:at])
		b.WriteString(tick)
		last = at
	}
	b.WriteString(src[last:])
	out := b.String()
	if _, err := parse.Parse(strings.NewReader(out), name); err != nil {
		return "", fmt.Errorf("the script could not be bounded: %v", err)
	}
	return out, nil
}

// scriptStopped turns the error of a step or a search that ran into a
// script's bound, or a script that answered outside the convention, into
// a refusal of the request with its message; other errors are left as
// they are.
func scriptStopped(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if i := strings.Index(msg, stopMark); i >= 0 {
		return api.Invalidf("%s", msg[i:])
	}
	if errors.Is(err, explore.ErrConvention) || errors.Is(err, explore.ErrBadScript) {
		return api.Invalidf("%v", err)
	}
	return err
}
