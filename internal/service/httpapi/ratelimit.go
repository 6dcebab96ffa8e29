package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"golang.org/x/time/rate"

	"github.com/lockmarket/lockmarket/market"
)

// Rates of the expensive reads besides the audit (which has its own
// limiter, auditLimiter), for the whole service. A client past them is
// answered 429 rate_limited with a Retry-After, so that clients looping on
// a read cannot crowd out the market's writers. The demo page reads the
// market and the users about once a second.
const (
	// UserScanRate and UserScanBurst bound GET /api/users (requests per
	// second), which reads every user ID and then each user of the page
	// in a round trip of its own.
	UserScanRate  = 20
	UserScanBurst = 40
	// ListingRate and ListingBurst bound GET /api/market in listings
	// answered per second (a page costs its limit): 1,000 pages of 50 a
	// second.
	ListingRate  = 50_000
	ListingBurst = 2 * ListingRate
	// ReceiptRate and ReceiptBurst bound GET /api/users/:id/purchases
	// (requests per second), which reads up to market.MaxReceiptScan
	// receipts.
	ReceiptRate  = 5
	ReceiptBurst = 10
)

// allow takes n tokens of l for a request that is about to do its
// expensive work (its input is checked first, so refusals of bad input cost
// nothing), or refuses it with 429 rate_limited, saying when the tokens
// will be there. unit names what a token is.
func allow(l *rate.Limiter, n int, what, unit string) error {
	r := l.ReserveN(time.Now(), n)
	if !r.OK() {
		return invalid("%s: %d %s is more than the %d allowed at once", what, n, unit, l.Burst())
	}
	if wait := r.Delay(); wait > 0 {
		r.Cancel()
		return &Error{Status: http.StatusTooManyRequests, Code: CodeRateLimited, RetryAfter: wait,
			Message: fmt.Sprintf("%s is limited to %g %s a second; try again in %v", what, float64(l.Limit()), unit,
				wait.Round(time.Millisecond))}
	}
	return nil
}

// budget bounds what one kind of costly request may take from the
// service: the size of its body and how many run at once. The lab uses
// one; so can any other route that runs work on the server's CPU.
type budget struct {
	what    string
	maxBody int64
	slots   chan struct{}
}

// newBudget allows bodies of at most maxBody bytes and concurrent
// requests at once.
func newBudget(what string, maxBody int64, concurrent int) *budget {
	return &budget{what: what, maxBody: maxBody, slots: make(chan struct{}, concurrent)}
}

// acquire takes a slot, or says it cannot (429 busy with a Retry-After);
// release gives it back.
func (b *budget) acquire() (release func(), err error) {
	select {
	case b.slots <- struct{}{}:
		return func() { <-b.slots }, nil
	default:
		return nil, &Error{Status: http.StatusTooManyRequests, Code: CodeRateLimited, RetryAfter: time.Second,
			Message: fmt.Sprintf("at most %d %s requests run at once; try again later", cap(b.slots), b.what)}
	}
}

// middleware applies the budget to a route: a larger body is refused with
// 413 request_too_large, a request over the concurrency with 429.
func (b *budget) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if req.ContentLength > b.maxBody {
			return &http.MaxBytesError{Limit: b.maxBody}
		}
		req.Body = http.MaxBytesReader(c.Response(), req.Body, b.maxBody)
		release, err := b.acquire()
		if err != nil {
			return err
		}
		defer release()
		return next(c)
	}
}

// UserListFresh is how long an answer of GET /api/users answers the same
// request again (the same offset and limit) without reading Redis, unless
// a request that may write (any but GET and HEAD) came in since: a room's
// pages, each reading the users every 3 s, cost one scan a second between
// them, and a client reads its own writes. A miss takes a token of the
// users' rate (UserScanRate); a request arriving while the same scan runs
// waits for its answer.
const UserListFresh = time.Second

// userLists keeps the recent answers of GET /api/users.
type userLists struct {
	mu sync.Mutex
	// gen counts the requests that may have written; an answer read
	// before the last one is stale.
	gen   uint64
	lists map[[2]int64]*userList
}

// userList is one answer, being read while ready is open.
type userList struct {
	gen   uint64
	at    time.Time
	ready chan struct{}
	users []market.User
	total int
	err   error
}

// wrote notes a request that may write, as it starts and as it ends.
func (u *userLists) wrote() {
	u.mu.Lock()
	u.gen++
	u.mu.Unlock()
}

// get answers the users list at key from a fresh answer, one being read,
// or a new read by scan after admit lets it.
func (u *userLists) get(ctx context.Context, key [2]int64, admit func() error,
	scan func() ([]market.User, int, error)) ([]market.User, int, error) {
	u.mu.Lock()
	l := u.lists[key]
	if l != nil && l.gen == u.gen && l.err == nil && (l.at.IsZero() || time.Since(l.at) < UserListFresh) {
		u.mu.Unlock()
		select {
		case <-l.ready:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
		if l.err == nil {
			return l.users, l.total, nil
		}
		u.mu.Lock()
	}
	if err := admit(); err != nil {
		u.mu.Unlock()
		return nil, 0, err
	}
	if u.lists == nil || len(u.lists) >= 64 {
		// no more than the page asks for, and a few others: start
		// afresh rather than grow with clients' offsets
		u.lists = map[[2]int64]*userList{}
	}
	l = &userList{gen: u.gen, ready: make(chan struct{})}
	u.lists[key] = l
	u.mu.Unlock()
	users, total, err := scan()
	u.mu.Lock()
	l.users, l.total, l.err, l.at = users, total, err, time.Now()
	u.mu.Unlock()
	close(l.ready)
	return users, total, err
}

// noteWrites marks the users' answers stale around every request that
// may write.
func (s *Server) noteWrites(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if m := c.Request().Method; m == http.MethodGet || m == http.MethodHead {
			return next(c)
		}
		s.userLists.wrote()
		defer s.userLists.wrote()
		return next(c)
	}
}
