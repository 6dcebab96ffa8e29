// Package lease holds the pieces every lease lock of package locking and
// of its sub-packages is built from: random tokens, the TTL check, the
// state every hold has, the compare-and-delete and compare-and-extend
// scripts and the naming of sibling keys in one hash slot.
package lease

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
)

// NewToken returns a fresh random owner token.
func NewToken() string { return uuid.NewString() }

// CheckTTL refuses a lease shorter than the 1 ms Redis can express.
func CheckTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("locking: ttl %v is below 1ms", ttl)
	}
	return nil
}

// MustTTL panics, naming the constructor fn, when ttl is below the 1 ms
// Redis can express: a lease given in code that cannot work is a
// programming error, refused where it is given (as time.NewTicker refuses
// a non-positive interval) rather than at each acquisition.
func MustTTL(fn string, ttl time.Duration) {
	if err := CheckTTL(ttl); err != nil {
		panic(fmt.Sprintf("%s: %v", fn, err))
	}
}

// Hold is the state every hold of a lease lock has: the key that stores
// its token, the token, a conservative estimate of when its lease ends,
// and how many attempts failed before it was granted. Its lease end may
// be read while an extension (a watchdog's) updates it.
type Hold struct {
	key, token string
	waits      int

	mu      sync.Mutex
	expires time.Time
}

// NewHold returns the hold of token on key, whose lease ends at expires.
func NewHold(key, token string, expires time.Time) *Hold {
	return &Hold{key: key, token: token, expires: expires}
}

// Key is the key that stores the hold's token.
func (h *Hold) Key() string { return h.key }

// Token is the value that identifies the hold.
func (h *Hold) Token() string { return h.token }

// Waits is how many attempts failed before the hold was granted.
func (h *Hold) Waits() int { return h.waits }

// SetWaits records how many attempts failed before the hold was granted;
// it is called once, before the hold is handed out.
func (h *Hold) SetWaits(n int) { h.waits = n }

// Expires is the estimate of when the lease ends.
func (h *Hold) Expires() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.expires
}

// SetExpires records a new estimate of when the lease ends (after an
// extension; the zero time once it was released).
func (h *Hold) SetExpires(t time.Time) {
	h.mu.Lock()
	h.expires = t
	h.mu.Unlock()
}

// Drift is the clock-drift allowance of a lease of ttl, as in the Redlock
// validity formula: ttl/100 + 2 ms (1% for clock rate differences, 2 ms for
// timer resolution).
func Drift(ttl time.Duration) time.Duration { return ttl/100 + 2*time.Millisecond }

// Scripts shared by the lock kinds whose key stores the holder's token.
// They are sent by EVALSHA, falling back to EVAL once per server.
var (
	// ReleaseScript deletes KEYS[1] if it holds ARGV[1] (the token); it
	// returns 1 if it did, 0 otherwise.
	ReleaseScript = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
	return redis.call("del", KEYS[1])
end
return 0`)
	// ExtendScript sets the expiry of KEYS[1] to ARGV[2] ms if it holds
	// ARGV[1] (the token); it returns 1 if it did, 0 otherwise.
	ExtendScript = redis.NewScript(`
if redis.call("get", KEYS[1]) == ARGV[1] then
	return redis.call("pexpire", KEYS[1], ARGV[2])
end
return 0`)
)

// hashTag returns the hash tag of key as Redis Cluster computes it: the
// text between the first '{' and the first '}' after it, when not empty.
func hashTag(key string) (string, bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return "", false
	}
	closing := strings.IndexByte(key[open+1:], '}')
	if closing <= 0 {
		return "", false
	}
	return key[open+1 : open+1+closing], true
}

// Sibling names a key that lives in the same Redis Cluster hash slot as
// key: key+suffix when key carries a hash tag, otherwise "{key}"+suffix (a
// key without a tag hashes as a whole, which is what the tag "{key}"
// hashes). A key that contains '{' or '}' without forming a tag cannot be
// matched that way; give such keys a tag.
func Sibling(key, suffix string) string {
	if _, ok := hashTag(key); ok || strings.ContainsAny(key, "{}") {
		return key + suffix
	}
	return "{" + key + "}" + suffix
}
