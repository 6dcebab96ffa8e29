package locktrace_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/locking/locktrace"
)

// scriptLog records the first argument (SHA1 or source) of every EVALSHA
// and EVAL a client sends.
type scriptLog struct{ scripts []string }

func (l *scriptLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *scriptLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			l.scripts = append(l.scripts, cmd.Args()[1].(string))
		}
		return next(ctx, cmd)
	}
}
func (l *scriptLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestScriptName checks that the scripts a fenced mutex sends are named,
// whether sent by EVALSHA or by EVAL, and that other scripts are not.
func TestScriptName(t *testing.T) {
	b := redistest.Mini(t)
	ctx := context.Background()
	log := &scriptLog{}
	c := redis.NewClient(&redis.Options{Addr: b.Addr()})
	defer c.Close()
	c.AddHook(log)
	m := locking.NewMutex(c, "lock:named", time.Second, locking.WithFencing())
	l, err := m.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Extend(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range log.scripts {
		if n := locktrace.ScriptName(s); n != "" && (len(names) == 0 || names[len(names)-1] != n) {
			names = append(names, n)
		}
	}
	want := []string{locktrace.ScriptAcquireFenced, locktrace.ScriptExtend, locktrace.ScriptRelease}
	if len(names) != len(want) || names[0] != want[0] || names[1] != want[1] || names[2] != want[2] {
		t.Errorf("scripts named %q (sent %d), want %q", names, len(log.scripts), want)
	}
	if n := locktrace.ScriptName("return 1"); n != "" {
		t.Errorf("another script is named %q", n)
	}
}
