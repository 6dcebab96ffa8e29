// Package httpapi is the HTTP service of the market: a JSON API over a
// market.Market, Prometheus metrics, a health check and an embedded demo
// page. New builds a Server; Handler is what an http.Server serves.
//
// Every error leaves through one handler (ErrorFor) as
// {"error":{"code":"...","message":"..."}}: a 4xx for anything the client
// did wrong, 503 when Redis cannot be reached, never a 500 for bad input.
//
// Listings and purchases may pick their strategy per request. Strategies
// are not safe to mix on one market, so the server runs them through a
// Gate (gate.go): operations of one strategy run concurrently, another strategy
// waits its turn. This holds for one service process per market.
//
// Listings and purchases with an Idempotency-Key header apply at most once
// per key (market.OpID): a client whose reply was lost (503
// outcome_unknown) retries with the same key. The audit reads a consistent
// snapshot and takes no gate, so it never stalls writers; one runs at a
// time, spaced out so that audits take at most 5% of the time.
package httpapi

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/time/rate"

	"github.com/lockmarket/lockmarket/internal/redis/rediscmd"
	"github.com/lockmarket/lockmarket/internal/report/latency"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/market"
)

// Defaults of Config.
const (
	DefaultBodyLimit   = 64 << 10         // bytes in one request body
	DefaultGateTimeout = 10 * time.Second // wait for another strategy to drain
	DefaultMarketLimit = 50               // listings per GET /api/market page
	MaxPageLimit       = 500              // largest limit of a page
	// DefaultReceiptLimit and MaxReceiptLimit bound the receipts of one
	// GET /api/users/:id/purchases.
	DefaultReceiptLimit = 50
	MaxReceiptLimit     = 1000
	// DefaultAuditCooldown is the least pause between two audits.
	DefaultAuditCooldown = time.Second
)

// HeaderIdempotencyKey is the request header that makes a listing or a
// purchase idempotent: its value is the operation's market.OpID.
const HeaderIdempotencyKey = "Idempotency-Key"

const (
	opList          = "list"
	opPurchase      = "purchase"
	outcomeOK       = "ok"
	outcomeReplayed = "replayed" // a repeat of an Idempotency-Key: nothing applied
)

// ctxErrorCode is the echo.Context key under which the error handler
// leaves the code it sent, for the request log.
const ctxErrorCode = "lockmarket.error_code"

//go:embed static
var staticFiles embed.FS

// Config configures a Server.
type Config struct {
	// Market is the market served. Required.
	Market *market.Market
	// Strategy is the initial default strategy (default market.Fine).
	Strategy market.Strategy
	// Logger receives request logs and errors (default: discard).
	Logger *slog.Logger
	// Registry receives the metrics (default: a new private registry).
	Registry *prometheus.Registry
	// BodyLimit bounds request bodies (default DefaultBodyLimit).
	BodyLimit int64
	// GateTimeout bounds how long a listing or purchase waits for the
	// operations of another strategy to drain (default DefaultGateTimeout).
	GateTimeout time.Duration
	// AuditCooldown is the least pause between the end of one audit and
	// the start of the next (default DefaultAuditCooldown); the pause is
	// also at least 19 times the last audit's duration. A request in
	// the pause, or while an audit runs, is refused with 429 audit_busy.
	AuditCooldown time.Duration
	// Env describes the Redis connection and the machine on GET /api/info
	// (default: an unknown Redis on this machine).
	Env output.Env
	// Rush runs POST /api/rush (package internal/service/rush); without one, the
	// rush's routes answer 404.
	Rush Rush
	// Lab runs POST /api/lab/runs (package internal/service/lab); without one,
	// the lab's routes answer 404.
	Lab Lab
	// Explore keeps the lab's explorer sessions (package
	// internal/service/exploresession); without one, their routes answer 404.
	Explore Explore
	// AdminToken, if set, is required as "Authorization: Bearer TOKEN" by
	// the routes that change the service rather than the market (the
	// default strategy, the rush, the lab; not the explorer's sessions,
	// which never touch the served Redis). Without one
	// they are open to the requests the same-origin check lets through:
	// run so only on a loopback bind.
	AdminToken string
	// LoopbackHosts refuses requests whose Host header is not a loopback
	// name or address (localhost, 127.0.0.1, [::1]): set it when the
	// service listens on loopback, so that a page whose name resolves to
	// the loopback address cannot pass for the service's own origin.
	LoopbackHosts bool
}

// Server is the HTTP service. It is safe for concurrent use.
type Server struct {
	cfg     Config
	m       *market.Market
	log     *slog.Logger
	gate    Gate
	metrics *metrics
	reg     *prometheus.Registry
	echo    *echo.Echo
	audits  auditLimiter
	// scans and receiptReads limit the expensive reads (see ratelimit.go);
	// labBudget bounds the lab's requests.
	userScans, listingReads, receiptReads *rate.Limiter
	labBudget                             *budget
	// userLists keeps the users list's answers a moment (ratelimit.go).
	userLists userLists
	// bodyLimits are the routes' own body limits, by route path, where
	// they are smaller than Config.BodyLimit (limitBody names them).
	bodyLimits map[string]int64

	mu       sync.RWMutex
	strategy market.Strategy
}

// New returns a Server for cfg.Market. It fails when cfg names no market
// or an unknown strategy, or when cfg.Registry already holds any of the
// service's metrics (e.g. those of another Server).
func New(cfg Config) (*Server, error) {
	if cfg.Market == nil {
		return nil, errors.New("httpapi: Config.Market is required")
	}
	if cfg.Strategy == "" {
		cfg.Strategy = market.Fine
	}
	if _, err := market.ParseStrategy(string(cfg.Strategy)); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.BodyLimit <= 0 {
		cfg.BodyLimit = DefaultBodyLimit
	}
	if cfg.GateTimeout <= 0 {
		cfg.GateTimeout = DefaultGateTimeout
	}
	if cfg.Env == (output.Env{}) {
		cfg.Env = output.NewEnv("", "")
	}
	if cfg.AuditCooldown <= 0 {
		cfg.AuditCooldown = DefaultAuditCooldown
	}
	s := &Server{cfg: cfg, m: cfg.Market, log: cfg.Logger, reg: cfg.Registry, strategy: cfg.Strategy,
		audits:    auditLimiter{now: time.Now, cooldown: cfg.AuditCooldown},
		userScans: rate.NewLimiter(UserScanRate, UserScanBurst), listingReads: rate.NewLimiter(ListingRate, ListingBurst),
		receiptReads: rate.NewLimiter(ReceiptRate, ReceiptBurst),
		labBudget:    newBudget("lab", labBodyLimit, 1), bodyLimits: map[string]int64{}}
	var err error
	var collectable []any
	if cfg.Rush != nil {
		collectable = append(collectable, cfg.Rush)
	}
	if cfg.Lab != nil {
		collectable = append(collectable, cfg.Lab)
	}
	if cfg.Explore != nil {
		collectable = append(collectable, cfg.Explore)
	}
	if s.metrics, err = newMetrics(cfg.Registry, marketPool{cfg.Market}, collectable...); err != nil {
		return nil, err
	}
	if err := s.routes(); err != nil {
		return nil, err
	}
	return s, nil
}

// Handler is the service's HTTP handler.
func (s *Server) Handler() http.Handler { return s.echo }

// Market is the market served.
func (s *Server) Market() *market.Market { return s.m }

// Strategy is the current default strategy.
func (s *Server) Strategy() market.Strategy {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.strategy
}

// SetStrategy changes the default strategy. Operations in flight finish
// under the strategy they started with.
func (s *Server) SetStrategy(st market.Strategy) error {
	if _, err := market.ParseStrategy(string(st)); err != nil {
		return err
	}
	s.mu.Lock()
	s.strategy = st
	s.mu.Unlock()
	return nil
}

func (s *Server) routes() error {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Use(s.observe,
		middleware.RecoverWithConfig(middleware.RecoverConfig{
			LogErrorFunc: func(c echo.Context, err error, stack []byte) error {
				s.log.Error("panic", slog.Any("err", err), slog.String("stack", string(stack)))
				return err
			},
		}),
		s.headers,
		s.sameOrigin,
		requireJSON,
		s.limitBody,
		s.noteWrites)

	api := e.Group("/api")
	api.POST("/users", s.createUser)
	api.GET("/users", s.listUsers)
	api.GET("/users/:id", s.getUser)
	api.GET("/users/:id/purchases", s.receipts)
	api.POST("/users/:id/inventory", s.grantItem)
	api.POST("/listings", s.createListing)
	api.GET("/market", s.getMarket)
	api.POST("/purchases", s.purchase)
	api.GET("/strategy", s.getStrategy)
	api.PUT("/strategy", s.putStrategy, s.admin)
	api.GET("/audit", s.audit)
	api.GET("/info", s.info)
	s.jobRoutes(api)
	e.GET("/healthz", s.healthz)
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{Registry: s.reg})))

	static, err := fs.Sub(staticFiles, "static")
	if err != nil {
		return err
	}
	e.FileFS("/", "index.html", static)
	e.StaticFS("/static", static)
	s.echo = e
	return nil
}

// observe logs every request (log/slog) and counts it by route and status.
// It runs outermost, so it sees the status the error handler chose.
func (s *Server) observe(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		if err := next(c); err != nil {
			c.Error(err)
		}
		req, res := c.Request(), c.Response()
		route := c.Path()
		if route == "" || route == "/*" {
			route = "unmatched"
		}
		s.metrics.observeRequest(req.Method, route, res.Status)
		level := slog.LevelInfo
		if res.Status >= 500 {
			level = slog.LevelWarn
		}
		attrs := []slog.Attr{
			slog.String("method", req.Method),
			slog.String("path", rediscmd.Bound(req.URL.Path, maxLogBytes)),
			slog.String("route", route),
			slog.Int("status", res.Status),
			slog.Int64("bytes", res.Size),
			slog.Float64("duration_ms", latency.Milliseconds(time.Since(start))),
			slog.String("remote", req.RemoteAddr),
		}
		if code, ok := c.Get(ctxErrorCode).(string); ok {
			attrs = append(attrs, slog.String("code", code))
		}
		s.log.LogAttrs(req.Context(), level, "request", attrs...)
		return nil
	}
}

// headers sets security headers; the demo page loads nothing from
// elsewhere, and the content security policy says so.
func (s *Server) headers(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'")
		h.Set("Referrer-Policy", "no-referrer")
		return next(c)
	}
}

// limitBody refuses bodies over the limit, the route's own if it is
// smaller (bodyLimits): at once when Content-Length says so, otherwise
// when reading passes the limit (http.MaxBytesReader).
func (s *Server) limitBody(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		limit := s.cfg.BodyLimit
		if l, ok := s.bodyLimits[c.Path()]; ok && l < limit {
			limit = l
		}
		if req.ContentLength > limit {
			return &http.MaxBytesError{Limit: limit}
		}
		req.Body = http.MaxBytesReader(c.Response(), req.Body, limit)
		return next(c)
	}
}

// strategyFor is the strategy of a listing or purchase: ?strategy= if
// given, the default otherwise.
func (s *Server) strategyFor(c echo.Context) (market.Strategy, error) {
	if !c.QueryParams().Has("strategy") {
		return s.Strategy(), nil
	}
	return market.ParseStrategy(c.QueryParam("strategy"))
}

// enter waits at the gate for st's turn, at most GateTimeout.
func (s *Server) enter(ctx context.Context, st market.Strategy) (release func(), waited time.Duration, err error) {
	start := time.Now()
	gctx, cancel := context.WithTimeout(ctx, s.cfg.GateTimeout)
	defer cancel()
	release, err = s.gate.Enter(gctx, string(st))
	waited = time.Since(start)
	s.metrics.observeGate(st, waited)
	if err != nil && ctx.Err() == nil {
		err = fmt.Errorf("%w: waited %v for operations of another strategy to finish", market.ErrContended, waited.Round(time.Millisecond))
	}
	return release, waited, err
}

// Request and response bodies. Pointer fields tell a missing field from a
// zero value.

type createUserRequest struct {
	ID    *string `json:"id"`
	Name  *string `json:"name"`
	Funds *int64  `json:"funds"`
}

type grantRequest struct {
	Item *string `json:"item"`
}

type listingRequest struct {
	Seller *string `json:"seller"`
	Item   *string `json:"item"`
	Price  *int64  `json:"price"`
}

type purchaseRequest struct {
	Buyer  *string `json:"buyer"`
	Seller *string `json:"seller"`
	Item   *string `json:"item"`
	Price  *int64  `json:"price"`
}

type strategyRequest struct {
	Strategy *string `json:"strategy"`
}

// costBody is what an operation cost, in every list and purchase answer.
type costBody struct {
	Strategy   market.Strategy `json:"strategy"`
	Retries    int             `json:"retries"`
	LockWaits  int             `json:"lock_waits"`
	WaitMS     float64         `json:"wait_ms"`
	GateWaitMS float64         `json:"gate_wait_ms"`
	LockLost   bool            `json:"lock_lost,omitempty"`
	// Replayed (only when true) says that the Idempotency-Key had been
	// applied before: nothing was applied now, and the cost is this
	// request's.
	Replayed bool `json:"replayed,omitempty"`
}

func newCost(st market.Strategy, c market.Cost, gate time.Duration) costBody {
	return costBody{Strategy: st, Retries: c.Retries, LockWaits: c.LockWaits, WaitMS: latency.Milliseconds(c.Wait),
		GateWaitMS: latency.Milliseconds(gate), LockLost: c.LockLost, Replayed: c.Replayed}
}

// outcome is the metrics outcome of a successful operation.
func outcome(c market.Cost) string {
	if c.Replayed {
		return outcomeReplayed
	}
	return outcomeOK
}

// opOptions reads the Idempotency-Key header of a listing or purchase:
// absent, or given once as a valid operation ID (1-64 of A-Z a-z 0-9 _ -).
func opOptions(c echo.Context) ([]market.OpOption, error) {
	keys := c.Request().Header.Values(HeaderIdempotencyKey)
	switch len(keys) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, invalid("header %s must be given at most once", HeaderIdempotencyKey)
	}
	if err := market.ValidID(HeaderIdempotencyKey, keys[0]); err != nil {
		return nil, err
	}
	return []market.OpOption{market.OpID(keys[0])}, nil
}

type listingResponse struct {
	market.Listing
	costBody
}

type purchaseResponse struct {
	Buyer  string `json:"buyer"`
	Seller string `json:"seller"`
	Item   string `json:"item"`
	Price  int64  `json:"price"`
	costBody
}

type strategyResponse struct {
	Strategy   market.Strategy   `json:"strategy"`
	Strategies []market.Strategy `json:"strategies"`
}

func (s *Server) createUser(c echo.Context) error {
	var req createUserRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if err := missing(str("name", req.Name), num("funds", req.Funds)); err != nil {
		return err
	}
	id := ""
	if req.ID != nil {
		if err := market.ValidID("user", *req.ID); err != nil {
			return err
		}
		id = *req.ID
	}
	id, err := s.m.CreateUser(c.Request().Context(), id, *req.Name, *req.Funds)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/users/"+id)
	return c.JSON(http.StatusCreated, market.User{ID: id, Name: *req.Name, Funds: *req.Funds, Inventory: []string{}})
}

func (s *Server) getUser(c echo.Context) error {
	u, err := s.m.GetUser(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, u)
}

func (s *Server) listUsers(c echo.Context) error {
	offset, err := queryInt(c, "offset", 0, 0, 1<<40)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", 100, 1, MaxPageLimit)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	users, total, err := s.userLists.get(ctx, [2]int64{offset, limit},
		func() error { return allow(s.userScans, 1, "listing users", "requests") },
		func() ([]market.User, int, error) { return s.scanUsers(ctx, offset, limit) })
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"users": users, "total": total})
}

// scanUsers reads the users from offset, limit of them, and how many
// there are.
func (s *Server) scanUsers(ctx context.Context, offset, limit int64) ([]market.User, int, error) {
	ids, err := s.m.UserIDs(ctx)
	if err != nil {
		return nil, 0, err
	}
	total := len(ids)
	ids = ids[min(int(offset), total):min(int(offset+limit), total)]
	users := make([]market.User, 0, len(ids))
	for _, id := range ids {
		u, err := s.m.GetUser(ctx, id)
		if errors.Is(err, market.ErrUserNotFound) {
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		users = append(users, u)
	}
	return users, total, nil
}

func (s *Server) grantItem(c echo.Context) error {
	user := c.Param("id")
	if err := market.ValidID("user", user); err != nil {
		return err
	}
	var req grantRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if err := missing(str("item", req.Item)); err != nil {
		return err
	}
	if err := s.m.GrantItem(c.Request().Context(), user, *req.Item); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, map[string]string{"user": user, "item": *req.Item})
}

func (s *Server) createListing(c echo.Context) error {
	st, err := s.strategyFor(c)
	if err != nil {
		return err
	}
	var req listingRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if err := missing(str("seller", req.Seller), str("item", req.Item), num("price", req.Price)); err != nil {
		return err
	}
	opts, err := opOptions(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	release, gate, err := s.enter(ctx, st)
	if err != nil {
		s.metrics.observe(opList, st, ErrorFor(err).Code, market.Cost{})
		return err
	}
	cost, err := s.m.List(ctx, st, *req.Seller, *req.Item, *req.Price, opts...)
	release()
	if err != nil {
		s.metrics.observe(opList, st, ErrorFor(err).Code, cost)
		return err
	}
	s.metrics.observe(opList, st, outcome(cost), cost)
	return c.JSON(http.StatusCreated, listingResponse{
		Listing:  market.Listing{Item: *req.Item, Seller: *req.Seller, Price: *req.Price},
		costBody: newCost(st, cost, gate),
	})
}

func (s *Server) purchase(c echo.Context) error {
	st, err := s.strategyFor(c)
	if err != nil {
		return err
	}
	var req purchaseRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if err := missing(str("buyer", req.Buyer), str("seller", req.Seller), str("item", req.Item), num("price", req.Price)); err != nil {
		return err
	}
	opts, err := opOptions(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	release, gate, err := s.enter(ctx, st)
	if err != nil {
		s.metrics.observe(opPurchase, st, ErrorFor(err).Code, market.Cost{})
		return err
	}
	cost, err := s.m.Purchase(ctx, st, *req.Buyer, *req.Seller, *req.Item, *req.Price, opts...)
	release()
	if err != nil {
		s.metrics.observe(opPurchase, st, ErrorFor(err).Code, cost)
		return err
	}
	s.metrics.observe(opPurchase, st, outcome(cost), cost)
	return c.JSON(http.StatusOK, purchaseResponse{
		Buyer: *req.Buyer, Seller: *req.Seller, Item: *req.Item, Price: *req.Price,
		costBody: newCost(st, cost, gate),
	})
}

func (s *Server) getMarket(c echo.Context) error {
	offset, err := queryInt(c, "offset", 0, 0, 1<<40)
	if err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", DefaultMarketLimit, 1, MaxPageLimit)
	if err != nil {
		return err
	}
	if err := allow(s.listingReads, int(limit), "reading the market", "listings"); err != nil {
		return err
	}
	listings, total, err := s.m.Listings(c.Request().Context(), offset, limit)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"listings": listings, "total": total})
}

func (s *Server) strategyBody() strategyResponse {
	return strategyResponse{Strategy: s.Strategy(), Strategies: market.Strategies}
}

func (s *Server) getStrategy(c echo.Context) error {
	return c.JSON(http.StatusOK, s.strategyBody())
}

func (s *Server) putStrategy(c echo.Context) error {
	var req strategyRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if err := missing(str("strategy", req.Strategy)); err != nil {
		return err
	}
	st, err := market.ParseStrategy(*req.Strategy)
	if err != nil {
		return err
	}
	if err := s.SetStrategy(st); err != nil {
		return err
	}
	s.log.Info("default strategy changed", slog.String("strategy", string(st)))
	return c.JSON(http.StatusOK, s.strategyBody())
}

// audit checks the market's invariants on a consistent snapshot of its
// state (market.Audit). It takes no gate: listings and purchases run on
// while it reads. One audit runs at a time (see auditLimiter); a request
// that comes while one runs, or too soon after, is refused with 429
// audit_busy and a Retry-After.
func (s *Server) audit(c echo.Context) error {
	if wait, busy := s.audits.start(); busy != "" {
		return &Error{Status: http.StatusTooManyRequests, Code: CodeAuditBusy, RetryAfter: wait,
			Message: busy + "; audits are spaced out so that they take at most 5% of the time"}
	}
	rep, err := func() (market.Report, error) {
		defer s.audits.finish(s.audits.now()) // even if the audit panics
		return s.m.Audit(c.Request().Context())
	}()
	if err != nil {
		return err
	}
	details := rep.Details
	if details == nil {
		details = []string{}
	}
	// The service keeps no ledger (it would grow for ever): the audit
	// checks the sales from the receipts in Redis; ledger_checked says
	// that no ledger was checked besides.
	return c.JSON(http.StatusOK, map[string]any{
		"violations": rep.Violations, "total": rep.Total(), "details": details,
		"users": rep.Users, "items": rep.Items, "listings": rep.Listings,
		"ledger_checked": rep.LedgerChecked,
	})
}

// receipts answers a user's sale receipts, newest first
// (market.ReceiptPage), ?limit= at most, older than ?before= if given; the
// answer's "next", when present, is the before of the next page. It is
// rate limited (ReceiptRate).
func (s *Server) receipts(c echo.Context) error {
	user := c.Param("id")
	if err := market.ValidID("user", user); err != nil {
		return err
	}
	limit, err := queryInt(c, "limit", DefaultReceiptLimit, 1, MaxReceiptLimit)
	if err != nil {
		return err
	}
	before := c.QueryParam("before")
	if before != "" && !market.ValidReceiptID(before) {
		return invalid("query parameter before must be a receipt ID (MS-SEQ), the next of a previous page")
	}
	if err := allow(s.receiptReads, 1, "reading receipts", "requests"); err != nil {
		return err
	}
	ctx := c.Request().Context()
	if _, err := s.m.GetUser(ctx, user); err != nil {
		return err
	}
	page, err := s.m.ReceiptPage(ctx, user, before, int(limit))
	if err != nil {
		return err
	}
	body := map[string]any{"receipts": page.Receipts}
	if page.Next != "" {
		body["next"] = page.Next
	}
	return c.JSON(http.StatusOK, body)
}

// infoResponse is GET /api/info: the market, its strategies, where it
// runs (the environment block every document carries) and the largest
// request body.
type infoResponse struct {
	Market     string            `json:"market"`
	Strategy   market.Strategy   `json:"strategy"`
	Strategies []market.Strategy `json:"strategies"`
	output.Env
	BodyLimitBytes int64 `json:"body_limit_bytes"`
}

func (s *Server) info(c echo.Context) error {
	return c.JSON(http.StatusOK, infoResponse{
		Market: s.m.Name(), Strategy: s.Strategy(), Strategies: market.Strategies,
		Env: s.cfg.Env, BodyLimitBytes: s.cfg.BodyLimit,
	})
}

// healthz answers 200 when Redis answers PING, 503 redis_unavailable
// otherwise.
func (s *Server) healthz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
	defer cancel()
	if err := s.m.Ping(ctx); err != nil {
		return &Error{Status: http.StatusServiceUnavailable, Code: CodeRedisUnavailable,
			Message: "Redis does not answer PING", Err: err}
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}
