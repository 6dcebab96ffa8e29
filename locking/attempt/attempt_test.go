package attempt_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/locking/attempt"
)

var (
	errNotAcquired = errors.New("not acquired")
	errNetwork     = errors.New("i/o timeout")
	errTooLong     = errors.New("waited too long")
)

func TestLoop(t *testing.T) {
	for _, tc := range []struct {
		name      string
		errs      []error // the attempts' errors, in order; then success
		waitFails int     // the wait after this attempt fails (-1: none)
		key       string
		wantWaits int
		wantErr   []error
		wantText  string
	}{
		{"first attempt", nil, -1, "", 0, nil, ""},
		{"after two refusals", []error{errNotAcquired, errNotAcquired}, -1, "", 2, nil, ""},
		{"an error that is no refusal", []error{errNotAcquired, errNetwork}, -1, "", 1, []error{errNetwork}, ""},
		{"a wait that fails, with the key", []error{errNotAcquired, errNotAcquired}, 1, "lock:a", 1,
			[]error{errNotAcquired, errTooLong}, "lock:a after 2 attempts"},
		{"a wait that fails, without a key", []error{errNotAcquired}, 0, "", 0,
			[]error{errNotAcquired, errTooLong}, ": after 1 attempts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := attempt.Retry{Key: tc.key, NotAcquired: errNotAcquired,
				Wait: func(_ context.Context, n int) error {
					if n == tc.waitFails {
						return errTooLong
					}
					return nil
				}}
			token, waits, err := attempt.Loop(context.Background(), r, func(_ context.Context, n int) (string, error) {
				if n < len(tc.errs) {
					return "", tc.errs[n]
				}
				return "token", nil
			})
			if waits != tc.wantWaits {
				t.Errorf("%d attempts failed first, want %d", waits, tc.wantWaits)
			}
			if tc.wantErr == nil {
				if err != nil || token != "token" {
					t.Fatalf("got %q, %v; want the token", token, err)
				}
				return
			}
			for _, want := range tc.wantErr {
				if !errors.Is(err, want) {
					t.Errorf("error %v does not wrap %v", err, want)
				}
			}
			if !strings.Contains(err.Error(), tc.wantText) {
				t.Errorf("error %q does not say %q", err, tc.wantText)
			}
		})
	}
}

func TestLoopRefused(t *testing.T) {
	taken := errors.New("taken")
	r := attempt.Retry{NotAcquired: errNotAcquired,
		Refused: func(err error) bool { return errors.Is(err, taken) },
		Wait:    func(context.Context, int) error { return nil }}
	_, waits, err := attempt.Loop(context.Background(), r, func(_ context.Context, n int) (int, error) {
		if n < 3 {
			return 0, taken
		}
		return n, nil
	})
	if err != nil || waits != 3 {
		t.Fatalf("got %d waits, %v; want 3 waits and the lock", waits, err)
	}
}

func TestEndedWhileWaiting(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct {
		name            string
		ctx             context.Context
		err             error
		wantNotAcquired bool
	}{
		{"live context: the error as it is", context.Background(), errNetwork, false},
		{"ended context: a give-up", ended, errNetwork, true},
		{"already a give-up", ended, errNotAcquired, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := attempt.EndedWhileWaiting(tc.ctx, tc.err, errNotAcquired)
			if !errors.Is(got, tc.err) || errors.Is(got, errNotAcquired) != tc.wantNotAcquired {
				t.Fatalf("%v: wraps the error %v, not acquired %v; want true, %v",
					got, errors.Is(got, tc.err), errors.Is(got, errNotAcquired), tc.wantNotAcquired)
			}
		})
	}
}
