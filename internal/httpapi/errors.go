package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"syscall"

	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/market"
)

// Error codes of the JSON API, in {"error":{"code":...,"message":...}}.
const (
	CodeInvalidRequest    = "invalid_request"    // 400: malformed or out-of-range input
	CodeNotFound          = "not_found"          // 404: unknown user, or no such route
	CodeListingNotFound   = "listing_not_found"  // 404: the listing to buy is not there
	CodeMethodNotAllowed  = "method_not_allowed" // 405
	CodePriceChanged      = "price_changed"      // 409
	CodeItemNotOwned      = "item_not_owned"     // 409
	CodeInsufficientFunds = "insufficient_funds" // 409
	CodeAlreadyExists     = "already_exists"     // 409
	CodeBusy              = "busy"               // 409: a rush or lab run is already running
	CodeMarketFull        = "market_full"        // 409: the market's money limit is reached
	CodeRequestTooLarge   = "request_too_large"  // 413: body over the limit
	CodeCanceled          = "request_canceled"   // 499: the client went away
	CodeInternal          = "internal_error"     // 500: a bug; never for bad input
	CodeRedisUnavailable  = "redis_unavailable"  // 503 + Retry-After: Redis cannot be reached
	CodeContended         = "contended"          // 503 + Retry-After: gave up under contention
	CodeTimeout           = "timeout"            // 503 + Retry-After: ran out of time
)

// statusClientClosedRequest is the non-standard status logged when the
// client hung up before the answer was ready.
const statusClientClosedRequest = 499

// retryAfterSeconds is the Retry-After sent with every 503.
const retryAfterSeconds = "1"

// Error is an API error with its status and code. Handlers return it for
// input errors found before the market is called; market and Redis errors
// are classified by ErrorFor.
type Error struct {
	Status  int
	Code    string
	Message string
	Err     error // the cause, if any
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
// It is the one place where errors become statuses.
func ErrorFor(err error) *Error {
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
	for _, d := range domainErrors {
		if errors.Is(err, d.err) {
			return &Error{Status: d.status, Code: d.code, Message: err.Error(), Err: err}
		}
	}
	// Context errors first: context.DeadlineExceeded is also a net.Error.
	switch {
	case errors.Is(err, context.Canceled):
		return &Error{Status: statusClientClosedRequest, Code: CodeCanceled, Message: "request canceled", Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeTimeout,
			Message: "the operation ran out of time; try again", Err: err}
	case redisUnavailable(err):
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeRedisUnavailable,
			Message: "Redis is unavailable; try again later", Err: err}
	}
	return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "internal error", Err: err}
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

// redisUnavailable reports whether err means Redis could not be reached or
// cannot serve right now: network errors, a closed connection, connection
// refused or reset, a pool timeout, or a server that is loading, read-only
// or down.
func redisUnavailable(err error) bool {
	var ne net.Error
	switch {
	case errors.As(err, &ne),
		errors.Is(err, io.EOF),
		errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed),
		errors.Is(err, redis.ErrPoolTimeout),
		errors.Is(err, redis.ErrClosed):
		return true
	}
	for _, p := range []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// handleError is echo's HTTPErrorHandler: every error becomes the JSON
// error shape with the status ErrorFor gives it.
func (s *Server) handleError(err error, c echo.Context) {
	ae := ErrorFor(err)
	c.Set(ctxErrorCode, ae.Code)
	if ae.Status >= 500 && ae.Status != http.StatusServiceUnavailable || ae.Code == CodeRedisUnavailable {
		s.log.LogAttrs(c.Request().Context(), slog.LevelError, "request failed",
			slog.String("code", ae.Code), slog.String("path", c.Request().URL.Path), slog.Any("err", err))
	}
	if c.Response().Committed {
		return
	}
	if ae.Status == http.StatusServiceUnavailable {
		c.Response().Header().Set("Retry-After", retryAfterSeconds)
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
