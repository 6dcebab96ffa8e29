package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/rediscmd"
	"github.com/lockmarket/lockmarket/locking"
	"github.com/lockmarket/lockmarket/market"
)

// Error codes of the JSON API, in {"error":{"code":...,"message":...}}.
const (
	CodeInvalidRequest      = "invalid_request"        // 400: malformed or out-of-range input
	CodeUnauthorized        = "unauthorized"           // 401: an admin route without the admin token
	CodeForbidden           = "forbidden"              // 403: a cross-origin write, or a foreign Host
	CodeNotFound            = "not_found"              // 404: unknown user, or no such route
	CodeListingNotFound     = "listing_not_found"      // 404: the listing to buy is not there
	CodeMethodNotAllowed    = "method_not_allowed"     // 405
	CodePriceChanged        = "price_changed"          // 409
	CodeItemNotOwned        = "item_not_owned"         // 409
	CodeInsufficientFunds   = "insufficient_funds"     // 409
	CodeAlreadyExists       = "already_exists"         // 409
	CodeBusy                = "busy"                   // 409: a rush or lab run is already running
	CodeMarketFull          = "market_full"            // 409: the market's money limit is reached
	CodeCorruptState        = "corrupt_state"          // 409: state changed out of band (market.ErrCorrupt, WRONGTYPE)
	CodeRequestTooLarge     = "request_too_large"      // 413: body over the limit
	CodeUnsupportedMedia    = "unsupported_media_type" // 415: a body that is not JSON
	CodeIdempotencyMismatch = "idempotency_mismatch"   // 422: Idempotency-Key used for another request
	CodeAuditBusy           = "audit_busy"             // 429 + Retry-After: an audit ran or runs
	CodeRateLimited         = "rate_limited"           // 429 + Retry-After: an expensive read too often
	CodeCanceled            = "request_canceled"       // 499: the client went away
	CodeInternal            = "internal_error"         // 500: a bug; never for bad input or Redis
	CodeContended           = "contended"              // 503 + Retry-After: gave up under contention
	CodeTimeout             = "timeout"                // 503 + Retry-After: ran out of time (outcome open)
	CodeLockLost            = "lock_lost"              // 503 + Retry-After: the lease ran out before the commit
)

// Codes of the 503s Redis causes, each with Retry-After. Only
// CodeOutcomeUnknown, CodeRedisError and CodeTimeout leave the outcome
// open: the others say that the command was never sent or that Redis
// refused it, so nothing was applied. Which it is, the message says, by
// the market's one classification of errors (market.OutcomeOf).
const (
	// CodeRedisUnavailable: Redis could not be reached (dial refused or
	// failed, pool timeout, client closed): the command was never sent.
	CodeRedisUnavailable = "redis_unavailable"
	// CodeOutcomeUnknown: the command was sent (or may have been) and its
	// reply was lost (read or write error, timeout, EOF, reset): it may
	// have been applied. Retry with the same Idempotency-Key.
	CodeOutcomeUnknown   = "outcome_unknown"
	CodeRedisOOM         = "redis_oom"         // OOM: over maxmemory with noeviction
	CodeRedisBusy        = "redis_busy"        // BUSY: a script or module command runs too long
	CodeRedisLoading     = "redis_loading"     // LOADING: the dataset is being loaded
	CodeRedisReadOnly    = "redis_readonly"    // READONLY: a read-only replica
	CodeRedisMasterDown  = "redis_masterdown"  // MASTERDOWN: a replica lost its master
	CodeRedisTryAgain    = "redis_tryagain"    // TRYAGAIN: a cluster slot is migrating
	CodeRedisClusterDown = "redis_clusterdown" // CLUSTERDOWN: the cluster is down
	CodeRedisMisconf     = "redis_misconf"     // MISCONF: writes stopped after a failed save
	CodeRedisNoReplicas  = "redis_noreplicas"  // NOREPLICAS: too few replicas to write
	// CodeRedisError: any other error reply of Redis; the outcome is not
	// known.
	CodeRedisError = "redis_error"
)

// statusClientClosedRequest is the non-standard status logged when the
// client hung up before the answer was ready.
const statusClientClosedRequest = 499

// retryAfter is the Retry-After of every 503.
const retryAfter = time.Second

// Error is an API error with its status and code. Handlers return it for
// input errors found before the market is called; market and Redis errors
// are classified by ErrorFor.
type Error struct {
	Status  int
	Code    string
	Message string
	// RetryAfter, if positive, is sent as Retry-After (in whole seconds,
	// rounded up); every 503 carries one.
	RetryAfter time.Duration
	Err        error // the cause, if any
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Code + ": " + e.Message + ": " + e.Err.Error()
	}
	return e.Code + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// invalid returns a 400 invalid_request error.
func invalid(format string, args ...any) *Error {
	return &Error{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

// errorBody is the JSON shape of every error response.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ErrorFor maps any error a handler returns to the API error sent for it.
// It is the one place where errors become statuses. No error of Redis or
// of its client becomes a 500: each is a 503 that says whether the
// operation was applied (see the Code constants). It speaks of writes;
// ReadErrorFor is the same for a request that only reads.
func ErrorFor(err error) *Error { return errorFor(err, false) }

// ReadErrorFor is ErrorFor for a request that only reads (GET, HEAD): a
// Redis failure's message says that the read changed nothing and can
// simply be tried again, and a reply lost to a timeout, EOF or a reset is
// redis_unavailable, as is Redis not reached: outcome_unknown and its rule
// (retry with the same Idempotency-Key) are a write's.
func ReadErrorFor(err error) *Error { return errorFor(err, true) }

func errorFor(err error, read bool) *Error {
	var ae *Error
	if errors.As(err, &ae) {
		return ae
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return fromEcho(he)
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return &Error{Status: http.StatusRequestEntityTooLarge, Code: CodeRequestTooLarge,
			Message: fmt.Sprintf("request body is larger than %d bytes", mbe.Limit), Err: err}
	}
	if errors.Is(err, locking.ErrLockLost) {
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeLockLost, Message: msgLockLost,
			RetryAfter: retryAfter, Err: err}
	}
	for _, d := range domainErrors {
		if errors.Is(err, d.err) {
			return &Error{Status: d.status, Code: d.code, Message: plainWords(err.Error()), Err: err}
		}
	}
	if e := redisFailure(err, read); e != nil {
		return e
	}
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error", Err: err}
}

// readOnly reports whether a request of method only reads: the service
// changes nothing on GET and HEAD.
func readOnly(method string) bool {
	return method == http.MethodGet || method == http.MethodHead
}

// domainErrors maps the market's sentinel errors, most specific first.
var domainErrors = []struct {
	err    error
	status int
	code   string
}{
	{market.ErrContended, http.StatusServiceUnavailable, CodeContended},
	{market.ErrInvalid, http.StatusBadRequest, CodeInvalidRequest},
	{market.ErrUserNotFound, http.StatusNotFound, CodeNotFound},
	{market.ErrListingNotFound, http.StatusNotFound, CodeListingNotFound},
	{market.ErrPriceChanged, http.StatusConflict, CodePriceChanged},
	{market.ErrItemNotOwned, http.StatusConflict, CodeItemNotOwned},
	{market.ErrInsufficientFunds, http.StatusConflict, CodeInsufficientFunds},
	{market.ErrAlreadyExists, http.StatusConflict, CodeAlreadyExists},
	{market.ErrMarketFull, http.StatusConflict, CodeMarketFull},
	{market.ErrCorrupt, http.StatusConflict, CodeCorruptState},
	{market.ErrOpMismatch, http.StatusUnprocessableEntity, CodeIdempotencyMismatch},
}

// Messages of the Redis 503s.
const (
	msgNotApplied = "this request applied nothing; try again later, with the same Idempotency-Key " +
		"until an answer that is not a 503 (an earlier attempt with the key may have applied)"
	msgUnknown = "the operation may or may not have been applied; " +
		"retry with the same Idempotency-Key to apply it exactly once"
	// msgLockLost is the message of a fenced commit refused because the
	// operation's lock lease ran out before it (market.WithFencing).
	msgLockLost = "the operation's lock lease ran out before its commit, so the fence refused the write: " +
		"nothing was applied; try again, with the same Idempotency-Key"
	// msgRead is the message of every Redis 503 of a read.
	msgRead = "this request only reads, and changed nothing; try it again later"
)

// redisReplies maps the first word of an error reply of Redis that
// refuses a command to its code. A refused command did not run; every
// operation writes in one command (an EXEC or a script) after its reads,
// so a refusal means nothing was applied.
var redisReplies = map[string]struct{ code, what string }{
	"OOM":         {CodeRedisOOM, "Redis is out of memory (maxmemory) and refuses writes"},
	"BUSY":        {CodeRedisBusy, "Redis is busy running a script"},
	"LOADING":     {CodeRedisLoading, "Redis is loading its dataset"},
	"READONLY":    {CodeRedisReadOnly, "Redis is a read-only replica"},
	"MASTERDOWN":  {CodeRedisMasterDown, "the Redis replica lost its master"},
	"TRYAGAIN":    {CodeRedisTryAgain, "a Redis Cluster slot is being migrated"},
	"CLUSTERDOWN": {CodeRedisClusterDown, "the Redis Cluster is down"},
	"MISCONF":     {CodeRedisMisconf, "Redis stopped writes after a failed save"},
	"NOREPLICAS":  {CodeRedisNoReplicas, "Redis has too few replicas to accept writes"},
}

// redisFailure classifies an error of Redis or of its client, or returns
// nil for any other error.
//
// The service's Redis client never resends a command (see
// internal/redis/redisconn), so the error tells where the command got to: one
// that was never sent (no connection could be dialled or taken from the
// pool) is redis_unavailable, nothing applied; one that was written, or
// may have been, and whose reply was lost (a read or write error, a
// timeout, EOF, a reset) is outcome_unknown; an error reply is Redis
// refusing the command (see redisReplies). For a read (read), every
// message says the read changed nothing, and a lost reply is
// redis_unavailable: a read has no outcome to settle.
func redisFailure(err error, read bool) *Error {
	e := func(code, msg string) *Error {
		return &Error{Status: http.StatusServiceUnavailable, Code: code, Message: msg, RetryAfter: retryAfter, Err: err}
	}
	// says is what the message says of the request.
	says := func(err error) string {
		if read {
			return msgRead
		}
		return outcomeText(err)
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		word, _, _ := strings.Cut(rerr.Error(), " ")
		if r, ok := redisReplies[word]; ok {
			return e(r.code, r.what+": "+says(err))
		}
		switch {
		case word == "WRONGTYPE":
			return &Error{Status: http.StatusConflict, Code: CodeCorruptState,
				Message: "a key of the market holds another type than the market writes: state changed out of band", Err: err}
		case redis.IsMaxClientsError(err), redis.IsAuthError(err):
			// Refused at connection time, before the command was sent.
			return e(CodeRedisUnavailable, "Redis refused the connection: "+says(err))
		}
		return e(CodeRedisError, "Redis answered "+word+": "+says(err))
	}
	var oe *net.OpError
	dial := errors.As(err, &oe) && oe.Op == "dial"
	switch {
	case dial, errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, redis.ErrPoolTimeout),
		errors.Is(err, redis.ErrPoolExhausted),
		errors.Is(err, redis.ErrClosed):
		return e(CodeRedisUnavailable, "Redis cannot be reached: "+says(err))
	// Context errors before other network errors: context.DeadlineExceeded
	// is also a net.Error.
	case errors.Is(err, context.Canceled):
		return &Error{Status: statusClientClosedRequest, Code: CodeCanceled, Message: "request canceled", Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return e(CodeTimeout, "the operation ran out of time: "+says(err))
	}
	var ne net.Error
	switch {
	case errors.As(err, &ne),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed):
		if read {
			return e(CodeRedisUnavailable, "Redis did not answer (its reply was lost): "+msgRead)
		}
		return e(CodeOutcomeUnknown, "the reply from Redis was lost: "+outcomeText(err))
	}
	return nil
}

// outcomeText is what a 503's message says of the operation that failed with
// err, by the market's one classification (market.OutcomeOf).
func outcomeText(err error) string {
	if market.OutcomeOf(err) == locking.NotApplied {
		return msgNotApplied
	}
	return msgUnknown
}

// fromEcho maps echo's own errors (no route, wrong method, body limit,
// malformed path or query) to the API's codes.
func fromEcho(he *echo.HTTPError) *Error {
	msg := http.StatusText(he.Code)
	if m, ok := he.Message.(string); ok && m != "" {
		msg = m
	}
	e := &Error{Status: he.Code, Message: msg, Err: he}
	switch {
	case he.Code == http.StatusNotFound:
		e.Code = CodeNotFound
		if he == echo.ErrNotFound {
			e.Message = "no such route or file"
		}
	case he.Code == http.StatusMethodNotAllowed:
		e.Code = CodeMethodNotAllowed
		e.Message = "method not allowed on this route"
	case he.Code == http.StatusRequestEntityTooLarge:
		e.Code = CodeRequestTooLarge
	case he.Code >= 400 && he.Code < 500:
		e.Code = CodeInvalidRequest
	case he.Code == http.StatusServiceUnavailable:
		e.Code = CodeRedisUnavailable
	default:
		e.Status, e.Code, e.Message = http.StatusInternalServerError, CodeInternal, "internal error"
	}
	return e
}

// handleError is echo's HTTPErrorHandler: every error becomes the JSON
// error shape with the status ErrorFor gives it.
func (s *Server) handleError(err error, c echo.Context) {
	ae := errorFor(err, readOnly(c.Request().Method))
	c.Set(ctxErrorCode, ae.Code)
	if level, ok := logLevel(ae); ok {
		s.log.LogAttrs(c.Request().Context(), level, "request failed",
			slog.String("code", ae.Code), slog.String("path", rediscmd.Bound(c.Request().URL.Path, maxLogBytes)),
			slog.String("err", rediscmd.Bound(err.Error(), maxLogBytes)))
	}
	if len(ae.Message) > maxMessageBytes {
		bounded := *ae
		bounded.Message = rediscmd.Bound(ae.Message, maxMessageBytes)
		ae = &bounded
	}
	if c.Response().Committed {
		return
	}
	if wait := ae.RetryAfter; wait > 0 || ae.Status == http.StatusServiceUnavailable {
		c.Response().Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(wait)))
	}
	var werr error
	if c.Request().Method == http.MethodHead {
		werr = c.NoContent(ae.Status)
	} else {
		werr = c.JSON(ae.Status, errorBody{Error: errorDetail{Code: ae.Code, Message: ae.Message}})
	}
	if werr != nil {
		s.log.Debug("writing error response", slog.Any("err", werr))
	}
}

// Bounds of what an error puts in the log (a field) and in its answer (the
// message): an error may quote a value a script made megabytes long, which
// is cut with a "…(N bytes)" marker.
const (
	maxLogBytes     = 1 << 10
	maxMessageBytes = 8 << 10
)

// logLevel is the level at which a failed request is logged, if at all:
// errors for bugs, warnings for Redis failures; refusals of the client's
// input and the service's own back-pressure are in the request log only.
func logLevel(ae *Error) (slog.Level, bool) {
	switch {
	case ae.Status >= 500 && ae.Status != http.StatusServiceUnavailable:
		return slog.LevelError, true
	case ae.Status == http.StatusServiceUnavailable && ae.Code != CodeContended && ae.Code != CodeTimeout:
		return slog.LevelWarn, true
	}
	return 0, false
}

// retryAfterSeconds is d in whole seconds, rounded up, at least 1.
func retryAfterSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

// plainRewrites turn the messages of the market's and the explorer's
// errors, which name the code they come from, into plain words for the
// person at the page: no package prefixes or Go type names, a script's
// failure by its script and line, not by Redis's internal script name and
// hash.
var plainRewrites = []struct {
	re   *regexp.Regexp
	with string
}{
	// The sentinels' own texts, which the code says already.
	{regexp.MustCompile(`^(invalid request|not found): `), ``},
	{regexp.MustCompile(`\b(explore|exploresession|locking|market): `), ``},
	// A script that failed on the sandbox, as Redis reports it.
	{regexp.MustCompile(`the target failed: client (\w+): script answered outside the convention: (\w+)\.lua failed: `),
		`client $1's $2 script failed: `},
	{regexp.MustCompile(`the target failed: client (\w+): script answered outside the convention: (\w+)\.lua returned `),
		`client $1's $2 script answered `},
	{regexp.MustCompile(`the target failed: client (\w+): `), `client $1's lock failed: `},
	{regexp.MustCompile(`(?:ERR )?(?:Error running script \(call to f_[0-9a-f]+\): )?@?user_script:(\d+): (.*?)(?:\s*script: [0-9a-f]+, on @user_script:\d+\.?)?$`),
		`line $1: $2`},
	{regexp.MustCompile(`(?:ERR )?([^:\s][^:]*?)\s*script: [0-9a-f]+, on @user_script:(\d+)\.?$`), `line $2: $1`},
	// A script that does not parse, as the parser says it.
	{regexp.MustCompile(`lua\.(\w+) does not parse: \w+ line:(\d+)\(column:(\d+)\)`), `your $1 script does not parse: line $2, column $3:`},
	{regexp.MustCompile(`\blua\.(acquire|release|extend)\b`), `your $1 script`},
	// Go's names of types and durations.
	{regexp.MustCompile(` \((?:int64|string|bool|float64|\[\]interface \{\}|\[\]any|<nil>)\)`), ``},
	{regexp.MustCompile(`\b(\d+)m0s\b`), `$1 min`},
	// The lock library's names.
	{regexp.MustCompile(`locking\.RWMutex`), `lockmarket's read-write lock`},
	{regexp.MustCompile(`locking\.Mutex`), `lockmarket's lock`},
	{regexp.MustCompile(`locking\.KeepAlive`), `its watchdog`},
	{regexp.MustCompile(`: Lock\.Held under WATCH`), `, checked under WATCH`},
}

// plainWords is msg, an error's message meant for the page, in plain
// words (see plainRewrites).
func plainWords(msg string) string {
	for _, r := range plainRewrites {
		msg = r.re.ReplaceAllString(msg, r.with)
	}
	return msg
}
