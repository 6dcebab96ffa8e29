package timeline_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	tl "github.com/lockmarket/lockmarket/internal/timeline"
	"github.com/lockmarket/lockmarket/locking"
)

const lock = "{m}:lock:x"

// extend has the shape of locking's extend script but is not one of its
// scripts: the timeline does not read it as an extension.
var extend = redis.NewScript(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) end return 0`)

// TestReading runs short histories on a real client and checks what
// Finish reads from their commands.
func TestReading(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(ctx context.Context, rdb *redis.Client, a, b context.Context)
		want []tl.Pattern
	}{
		{"lease runs out by its TTL, then another takes it (real server only: miniredis keys expire only when its clock is moved)", func(ctx context.Context, rdb *redis.Client, a, b context.Context) {
			rdb.SetNX(a, lock, "tok-a", 20*time.Millisecond)
			time.Sleep(40 * time.Millisecond)
			rdb.SetNX(b, lock, "tok-b", time.Minute)
		}, []tl.Pattern{
			{Client: "A", Kind: tl.Acquire, Detail: "lease 20ms"},
			{Client: "A", Kind: tl.LeaseExpired, Detail: "20ms TTL passed"},
			{Client: "B", Kind: tl.Acquire, Clean: true},
		}},
		{"a renewed lease does not run out", func(ctx context.Context, rdb *redis.Client, a, b context.Context) {
			l, _ := locking.NewMutex(rdb, lock, 30*time.Millisecond).TryAcquire(a)
			_ = l.Extend(a, time.Minute)
			time.Sleep(40 * time.Millisecond)
			rdb.SetNX(b, lock, "tok-b", time.Minute)
			_ = l.Release(a)
		}, []tl.Pattern{
			{Client: "A", Kind: tl.Acquire},
			{Client: "A", Kind: tl.LeaseStart, Detail: "extend script → lease of 1m0s"},
			{Client: "B", Kind: tl.AcquireFailed, Detail: "held by A"},
			{Client: "A", Kind: tl.Release, Detail: "releases lock:x"},
		}},
		{"SET NX GET: no value before is a lock taken, another's token a refusal, its own token its own", func(ctx context.Context, rdb *redis.Client, a, b context.Context) {
			args := redis.SetArgs{Mode: "NX", TTL: time.Minute, Get: true}
			rdb.SetArgs(a, lock, "tok-a", args)
			rdb.SetArgs(b, lock, "tok-b", args)
			rdb.SetArgs(a, lock, "tok-a", args) // a repeat of its own attempt
		}, []tl.Pattern{
			{Client: "A", Kind: tl.Acquire, Detail: "SET EX NX GET → holds lock:x (token tok-a, lease 1m0s)"},
			{Client: "B", Kind: tl.AcquireFailed, Detail: "held by A"},
			{Client: "A", Kind: tl.Acquire, Clean: true},
		}},
		{"a release script refused leaves the lock alone", func(ctx context.Context, rdb *redis.Client, a, b context.Context) {
			l, _ := locking.NewMutex(rdb, lock, time.Minute).TryAcquire(b)
			rdb.Set(a, lock, "tok-a", time.Minute) // taken over
			_ = l.Release(b)
		}, []tl.Pattern{
			{Client: "B", Kind: tl.Release, Clean: true, Detail: "not ours any more"},
		}},
		{"a script that is not one of the lock's is shown, not read as a lock step", func(ctx context.Context, rdb *redis.Client, a, b context.Context) {
			rdb.SetNX(a, lock, "tok-a", time.Minute)
			extend.Run(a, rdb, []string{lock}, "tok-a", 60000)
			rdb.SetNX(b, lock, "tok-b", time.Minute)
		}, []tl.Pattern{
			{Client: "A", Kind: tl.Acquire, Detail: "lease 1m0s"},
			{Client: "A", Kind: tl.Command, Detail: "EVAL"},
			{Client: "B", Kind: tl.AcquireFailed, Detail: "held by A"},
		}},
		{"a commit by a holder whose lock was taken over is marked", func(ctx context.Context, rdb *redis.Client, a, b context.Context) {
			rdb.Set(a, lock, "tok-a", 0)
			rdb.Set(b, lock, "tok-b", 0) // overwrites: two holders
			rdb.TxPipelined(a, func(p redis.Pipeliner) error {
				p.SAdd(a, "{m}:inventory:ann", "relic")
				p.ZRem(a, "{m}:market:", "relic.sam")
				return nil
			})
		}, []tl.Pattern{
			{Client: "B", Kind: tl.Acquire, Violation: true, Detail: "no expiry"},
			{Client: "A", Kind: tl.Commit, Violation: true, Detail: "relic into ann's inventory, relic.sam off the market"},
		}},
		{"an EXEC aborted by a WATCH is a refused commit", func(ctx context.Context, rdb *redis.Client, a, b context.Context) {
			rdb.Watch(a, func(tx *redis.Tx) error {
				rdb.Set(b, "{m}:users:ann", "x", 0)
				_, err := tx.TxPipelined(a, func(p redis.Pipeliner) error {
					p.HIncrBy(a, "{m}:users:sam", "funds", 1)
					return nil
				})
				return err
			}, "{m}:users:ann")
		}, []tl.Pattern{
			{Client: "A", Kind: tl.Command, Detail: "WATCH users:ann"},
			{Client: "A", Kind: tl.CommitRefused, Detail: "EXEC aborted: a watched key changed (WATCH users:ann)"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			check := func(t *testing.T, be *redistest.Backend) {
				rdb := be.NewClient(t)
				rdb.AddHook(tl.Hook{})
				rec := tl.NewRecorder("{m}:")
				ctx := context.Background()
				tc.run(ctx, rdb, rec.As(ctx, "A"), rec.As(ctx, "B"))
				got := rec.Finish("t", "", "", 0)
				if k := got.Follow(tc.want...); k >= 0 {
					var b strings.Builder
					got.Text(&b, 100, true)
					t.Fatalf("step %d (%v) not found:\n%s", k, tc.want[k], b.String())
				}
				for _, e := range got.Events {
					if strings.HasPrefix(tc.name, "a script that is not") && e.Kind == tl.LeaseStart {
						t.Fatalf("a script that is not the lock's read as an extension: %+v", e)
					}
				}
			}
			if strings.Contains(tc.name, "real server only") {
				check(t, redistest.Real(t))
				return
			}
			redistest.Run(t, check)
		})
	}
}

// TestTextAndJSON checks that the text fits its width and marks the
// violation, and that JSON round-trips.
func TestTextAndJSON(t *testing.T) {
	be := redistest.Mini(t)
	rdb := be.NewClient(t)
	rdb.AddHook(tl.Hook{})
	rec := tl.NewRecorder("{m}:")
	rec.Lanes("A ann", "B bob", "C cat")
	ctx := context.Background()
	a, b := rec.As(ctx, "A ann"), rec.As(ctx, "B bob")
	rdb.SetNX(a, lock, strings.Repeat("f", 36), time.Minute)
	rec.Add("A ann", tl.PauseStart, "paused for a long while, with a long explanation that must wrap")
	rdb.Del(b, lock)
	rec.Add("A ann", tl.PauseEnd, "goes on")
	rec.Finding(true, "the thing was sold twice")
	got := rec.Finish("recipe x", "flawed", "Broken: sold twice.", 2)

	for _, width := range []int{100, 60} {
		var out strings.Builder
		if err := got.Text(&out, width, false); err != nil {
			t.Fatal(err)
		}
		for l := range strings.Lines(out.String()) {
			if n := utf8.RuneCountInString(strings.TrimRight(l, "\n")); n > width {
				t.Errorf("width %d: line of %d: %q", width, n, l)
			}
		}
		for _, want := range []string{tl.MarkViolation, "ann's lock", "recipe x (flawed)", "Broken: sold twice.", "┆"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("width %d: no %q in\n%s", width, want, out.String())
			}
		}
	}

	b2, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"at_ms":`, `"end_ms":`, `"kind":"acquire"`, `"violation":"deletes A ann's lock"`} {
		if !strings.Contains(string(b2), key) {
			t.Errorf("JSON lacks %s: %s", key, b2)
		}
	}
	var back tl.Timeline
	if err := json.Unmarshal(b2, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Events) != len(got.Events) || back.Events[0].Detail != got.Events[0].Detail ||
		back.Clients[2] != "C cat" || back.Verdict != got.Verdict {
		t.Errorf("round trip: %+v", back)
	}
}

// TestMerge checks that events recorded by another process's recorder
// fall into place by time and keep their command/reply pairs.
func TestMerge(t *testing.T) {
	be := redistest.Mini(t)
	start := time.Now()
	parent := tl.NewRecorderAt("{m}:", start)
	child := tl.NewRecorderAt("{m}:", start)
	rp, rc := be.NewClient(t), be.NewClient(t)
	rp.AddHook(tl.Hook{})
	rc.AddHook(tl.Hook{})
	ctx := context.Background()
	rc.SetNX(child.As(ctx, "A"), lock, "tok-a", time.Minute)
	parent.Add("A", tl.PauseStart, "stopped")
	rp.SetNX(parent.As(ctx, "B"), lock, "tok-b", time.Minute)
	parent.Merge(child.Raw())
	got := parent.Finish("merge", "", "", 0)
	if k := got.Follow(
		tl.Pattern{Client: "A", Kind: tl.Acquire},
		tl.Pattern{Client: "A", Kind: tl.PauseStart},
		tl.Pattern{Client: "B", Kind: tl.AcquireFailed, Detail: "held by A"},
	); k >= 0 {
		t.Fatalf("step %d missing: %+v", k, got.Events)
	}
	for _, e := range got.Events {
		if e.Kind == tl.Reply && got.Events[e.Ref-1].Kind != tl.Command {
			t.Errorf("reply %d refers to %d, a %s", e.Seq, e.Ref, got.Events[e.Ref-1].Kind)
		}
	}
}
