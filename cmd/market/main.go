// Command market serves the lockmarket marketplace over HTTP: a JSON API
// whose listings and purchases run under a choice of concurrency
// strategies (watch, coarse, fine, lua), Prometheus metrics, and a demo
// page at /.
//
//	market -addr 127.0.0.1:8080 -redis auto -strategy fine -name market -seed-demo
//
// -redis takes "auto" (REDIS_URL, else a private redis-server from PATH,
// else an embedded miniredis), a redis:// URL, or a comma-separated list
// of cluster nodes. The service listens on loopback by default; on any
// other address it requires an admin token (-admin-token or
// LOCKMARKET_ADMIN_TOKEN), which the routes that change the service (the
// default strategy, the rush, the lab, explorer sessions) then take as
// "Authorization: Bearer TOKEN" (see docs/service.md). -classroom listens
// on the machine's network address with a generated token, and prints the
// URL students open and the teacher's token. SIGINT, SIGTERM or SIGHUP
// (the terminal closed) shut the server down gracefully. The redis-server
// sandboxes of explorer sessions die with the service however it ends;
// what a service killed left behind (their directories) is swept when
// the next one starts.
// "market version" (or "market -version") prints the version.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/redisconn"
	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/report/latency"
	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/service/demo"
	"github.com/lockmarket/lockmarket/internal/service/exploresession"
	"github.com/lockmarket/lockmarket/internal/service/httpapi"
	"github.com/lockmarket/lockmarket/internal/service/lab"
	"github.com/lockmarket/lockmarket/internal/service/rush"
	"github.com/lockmarket/lockmarket/market"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	// After the first signal, restore the default handling: a second
	// Ctrl-C ends the process without waiting for the graceful shutdown.
	context.AfterFunc(ctx, stop)
	redis.SetLogger(redisconn.NewLogger(os.Stderr, "market"))
	if code := exitCode(run(ctx, os.Args[1:], os.Stdout, os.Stderr), os.Stderr); code != 0 {
		os.Exit(code)
	}
}

// exitCode says err on stderr and returns the exit status for it: 0 for
// none (or -h, whose usage was printed), 2 for a usage error (with where
// the usage is), 1 for anything else.
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, output.Wrap("market: "+err.Error(), output.Width))
	var usage usageError
	if errors.As(err, &usage) {
		fmt.Fprintln(stderr, "run 'market -h' for usage")
		return 2
	}
	return 1
}

// usageError is a mistake in the command line: the process exits with
// status 2, as flag's own errors do.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// envAdminToken is the environment variable that gives the admin token
// when -admin-token does not.
const envAdminToken = "LOCKMARKET_ADMIN_TOKEN"

// loopbackAddr reports whether a listen address binds the loopback
// interface only: localhost or a loopback IP. An empty host (every
// interface) or another name is not loopback.
func loopbackAddr(addr string) (bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false, fmt.Errorf("-addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return true, nil
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback(), nil
}

// strategyNames lists the strategies for a usage message.
func strategyNames() string {
	names := make([]string, len(market.Strategies))
	for i, s := range market.Strategies {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// Timeouts of the HTTP server. WriteTimeout leaves room for a purchase
// that waits for its strategy's turn (10 s) and then for a lock (10 s).
// A new connection's first request must arrive within readHeaderTimeout
// of its opening: a browser opens connections ahead of its requests, and
// with a class's 40 pages loading at once it sent on them after more than
// 5 s, finding them closed (net::ERR_SOCKET_NOT_CONNECTED, a page not
// loaded). readTimeout, counted from the same moment, leaves 15 s for the
// body after it.
const (
	readHeaderTimeout = 30 * time.Second
	readTimeout       = 45 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 2 * time.Minute
)

// run is the whole program: it parses args, connects to Redis, serves
// until ctx ends and then shuts down gracefully. Logs go to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseConfig(args, stderr)
	if err != nil {
		return err
	}
	if c.version {
		fmt.Fprintln(stdout, output.VersionLine("market"))
		return nil
	}
	var handler slog.Handler = slog.NewTextHandler(stderr, nil)
	if c.logJSON {
		handler = slog.NewJSONHandler(stderr, nil)
	}
	log := slog.New(handler)

	// Take the port before anything else, so that a port in use is said
	// at once and leaves Redis and the market untouched.
	ln, err := listen(c.addr)
	if err != nil {
		return err
	}
	defer ln.Close() // closed by the server once it serves; this covers the errors before

	sweep(log)
	conn, err := redisconn.Open(ctx, c.redisSpec, stderr)
	if errors.Is(err, redisconn.ErrSpec) {
		return usageError{err}
	}
	if err != nil {
		return err
	}
	defer func() {
		if err := conn.Close(); err != nil {
			log.Warn("closing Redis", slog.Any("err", err))
		}
	}()
	srv, err := newService(ctx, c, conn, log)
	if err != nil {
		return err
	}
	return serve(ctx, c, ln, srv, log, conn.Mode, stdout)
}

// sweep stops the sandboxes a service killed before it could stop them
// left behind, and removes their directories (redisserver.SweepConfined).
func sweep(log *slog.Logger) {
	dirs, err := redisserver.SweepConfined()
	if len(dirs) > 0 {
		log.Info("swept the sandboxes a previous run left", slog.Int("directories", len(dirs)))
	}
	if err != nil {
		log.Warn("sweeping the sandboxes a previous run left", slog.String("err", output.Printable(err.Error(), 200)))
	}
}

// listen takes the port of addr; a port in use says which to try instead.
func listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, usageError{fmt.Errorf("-addr %s: the port is in use (another program listens there); "+
			"use -addr with another port, e.g. -addr %s", addr, nextPort(addr))}
	}
	if err != nil {
		return nil, usageError{fmt.Errorf("-addr %s: %w", addr, err)}
	}
	return ln, nil
}

// newService opens the market on conn, seeds it when asked, and builds
// the HTTP service around it.
func newService(ctx context.Context, c *config, conn *redisconn.Conn, log *slog.Logger) (*httpapi.Server, error) {
	// Fenced: a Coarse or Fine commit that lands after its lease ran out
	// (a stalled process or Redis) is refused rather than applied beside
	// the next holder's, which would sell an item twice.
	m, err := market.New(conn.Client, c.name, market.WithOpTTL(c.opTTL), market.WithFencing())
	if err != nil {
		return nil, err
	}
	if c.seed {
		rep, err := demo.Seed(ctx, m, c.strategy)
		if err != nil {
			return nil, err
		}
		log.Info("demo data", slog.Int("users", rep.Users), slog.Int("items", rep.Items), slog.Int("listings", rep.Listings))
	}
	return httpapi.New(httpapi.Config{
		Market: m, Strategy: c.strategy, Logger: log, BodyLimit: c.bodyLimit, AuditCooldown: c.auditCooldown,
		Env:  conn.Env(),
		Rush: rush.New(conn.Client, conn.Mini != nil, conn.Env().Redis.Mode, log),
		Lab:  lab.New(conn.Client, conn.Mini, log),
		Explore: exploresession.New(exploresession.Config{RedisServer: c.sandboxRedis,
			PerClient: c.sessionsPerAddress, MaxSessions: c.sessionsTotal, StepBudget: c.stepBudget}),
		AdminToken: c.adminToken, LoopbackHosts: c.loopback,
	})
}

// serve serves srv on ln until ctx ends or the server fails, then shuts
// it down: the requests in flight and srv's background work get
// c.shutdown to end. mode is the Redis's, for the log.
func serve(ctx context.Context, c *config, ln net.Listener, srv *httpapi.Server, log *slog.Logger, mode string, stdout io.Writer) error {
	// Close stops a rush or lab run in progress and waits for it; at
	// shutdown it runs beside the HTTP server's, within the same timeout.
	jobsDone := make(chan struct{})
	var closeOnce sync.Once
	closeJobs := func() { closeOnce.Do(func() { go func() { srv.Close(); close(jobsDone) }() }) }
	defer func() {
		closeJobs()
		if jobsDone != nil {
			<-jobsDone
		}
	}()

	hs := &http.Server{
		Handler:           srv.Handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	url := "http://" + ln.Addr().String() + "/"
	log.Info("serving", slog.String("url", url), slog.String("market", c.name),
		slog.String("strategy", string(c.strategy)), slog.String("redis", mode))
	announce(stdout, c, ln.Addr(), url)

	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down", slog.Float64("timeout_s", latency.Seconds(c.shutdown)))
	sctx, cancel := context.WithTimeout(context.Background(), c.shutdown)
	defer cancel()
	closeJobs()
	if err := hs.Shutdown(sctx); err != nil {
		log.Warn("requests still in flight; closing", slog.Any("err", err))
		hs.Close()
	}
	select {
	case <-jobsDone:
	case <-sctx.Done():
		log.Warn("background work (a rush or a lab run) still stopping; leaving it")
		jobsDone = nil // the deferred wait does not block
	}
	if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	log.Info("stopped")
	return nil
}

// announce says on stdout where the service is served and who may change
// it.
func announce(stdout io.Writer, c *config, addr net.Addr, url string) {
	fmt.Fprintf(stdout, "market: serving %s (demo page at %s)\n", c.name, url)
	switch {
	case c.room != nil:
		c.room.print(stdout, addr)
	case c.loopback && c.adminToken == "":
		fmt.Fprintf(stdout, "market: listening on loopback only; the admin routes take no token (same-origin requests only)\n")
	case c.loopback:
		fmt.Fprintf(stdout, "market: listening on loopback only; the admin routes require the admin token\n")
	default:
		fmt.Fprintf(stdout, "market: listening on %s, reachable from other machines; the admin routes require the admin token\n", addr)
	}
}
