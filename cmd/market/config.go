package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/lockmarket/lockmarket/internal/report/output"
	"github.com/lockmarket/lockmarket/internal/service/exploresession"
	"github.com/lockmarket/lockmarket/internal/service/httpapi"
	"github.com/lockmarket/lockmarket/market"
)

// config is the command line, checked.
type config struct {
	addr          string
	redisSpec     string
	strategy      market.Strategy
	name          string
	seed          bool
	logJSON       bool
	bodyLimit     int64
	shutdown      time.Duration
	version       bool
	opTTL         time.Duration
	adminToken    string
	auditCooldown time.Duration
	sandboxRedis  string
	// sessionsPerAddress and sessionsTotal bound the explorer's sessions.
	sessionsPerAddress int
	sessionsTotal      int
	// stepBudget bounds a step of a session of pasted Lua.
	stepBudget time.Duration

	room     *classroomStart // how -classroom listens, or nil
	loopback bool            // addr binds the loopback interface only
}

// parseConfig reads the command line args, writing the usage and flag's
// mistakes to stderr. A mistake is a usageError; with -version, the rest
// is not checked.
func parseConfig(args []string, stderr io.Writer) (*config, error) {
	if len(args) > 0 && args[0] == "version" { // as "simulate version"
		if len(args) > 1 {
			return nil, usageError{fmt.Errorf("version: unexpected argument %q", args[1])}
		}
		return &config{version: true}, nil
	}
	var c config
	var strategy string
	var classroom bool
	fs := c.flagSet(stderr, &strategy, &classroom)
	// A mistake stays one line (main adds where the usage is).
	err := output.ParseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, err
	}
	if err != nil {
		return nil, usageError{err}
	}
	if c.version {
		return &c, nil
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Errorf("unexpected arguments: %q", fs.Args())}
	}
	if err := c.check(strategy); err != nil {
		return nil, usageError{err}
	}
	if err := c.access(classroom); err != nil {
		return nil, usageError{err}
	}
	return &c, nil
}

// flagSet defines the flags, into c but for -strategy and -classroom,
// which need checking first.
func (c *config) flagSet(stderr io.Writer, strategy *string, classroom *bool) *flag.FlagSet {
	fs := flag.NewFlagSet("market", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "listen address")
	fs.StringVar(&c.redisSpec, "redis", "auto", `Redis: "auto", a redis:// URL, or cluster nodes host:port,host:port`)
	fs.StringVar(strategy, "strategy", string(market.Fine), "default strategy: watch, coarse, fine or lua")
	fs.StringVar(&c.name, "name", "market", "market name (the keys' hash tag)")
	fs.BoolVar(&c.seed, "seed-demo", false, "create demo users, items and listings (skips what exists)")
	fs.BoolVar(&c.logJSON, "log-json", false, "log JSON lines instead of text")
	fs.Int64Var(&c.bodyLimit, "body-limit", httpapi.DefaultBodyLimit, "largest request body in bytes")
	fs.DurationVar(&c.shutdown, "shutdown-timeout", 10*time.Second, "how long to wait for requests in flight at shutdown")
	fs.BoolVar(&c.version, "version", false, "print the version and exit")
	fs.DurationVar(&c.opTTL, "idempotency-ttl", 24*time.Hour, "how long an Idempotency-Key is remembered (at least 1ms)")
	fs.StringVar(&c.adminToken, "admin-token", "", "token the routes that change the service require as "+
		"\"Authorization: Bearer TOKEN\" (default $"+envAdminToken+"); required on a non-loopback -addr")
	fs.DurationVar(&c.auditCooldown, "audit-cooldown", httpapi.DefaultAuditCooldown,
		"least pause between two audits (also at least 19 times the last audit's duration)")
	fs.StringVar(&c.sandboxRedis, "sandbox-redis", "redis-server", "redis-server that runs pasted Lua, "+
		"one server per explorer session (a path, or a name on PATH); without one pasted Lua is refused")
	fs.IntVar(&c.sessionsPerAddress, "sessions-per-address", exploresession.DefaultPerClient,
		"explorer sessions one remote address may hold (a room behind one NAT or proxy is one address)")
	fs.IntVar(&c.sessionsTotal, "sessions-total", exploresession.DefaultMaxSessions,
		"explorer sessions the service holds in all")
	fs.DurationVar(&c.stepBudget, "step-budget", exploresession.DefaultStepBudget,
		"processor time of its sandbox a step of pasted Lua may take (its wall-clock backstops are "+
			"multiples of it; 10ms to 10m)")
	fs.BoolVar(classroom, "classroom", false, "listen on this machine's network address (the port of -addr) "+
		"with a generated admin token, and print the URL students open and the teacher's token")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: market [flags]\n       market version\n\n"+
			"Serves the market's JSON API, /metrics and the demo page at /.\n\n")
		output.PrintDefaults(fs.Output(), fs)
	}
	return fs
}

// maxSessions bounds -sessions-total: a session of pasted Lua holds a
// redis-server of its own (about 3 MiB, results/sandbox), a recipe's an
// embedded server.
const maxSessions = 2000

// check checks the values of the flags, and sets the strategy.
func (c *config) check(strategy string) error {
	st, err := market.ParseStrategy(strategy)
	if err != nil {
		return fmt.Errorf("-strategy %q: unknown strategy (want one of %s)", strategy, strategyNames())
	}
	c.strategy = st
	if err := market.ValidID("market name", c.name); err != nil {
		return fmt.Errorf("-name %q: a market name is 1 to 64 of A-Z a-z 0-9 _ -", c.name)
	}
	if c.bodyLimit < 1 {
		return fmt.Errorf("-body-limit %d must be at least 1", c.bodyLimit)
	}
	if c.opTTL < time.Millisecond {
		return fmt.Errorf("-idempotency-ttl %v must be at least 1ms", c.opTTL)
	}
	if c.auditCooldown <= 0 {
		return fmt.Errorf("-audit-cooldown %v must be positive", c.auditCooldown)
	}
	if c.sessionsTotal < 1 || c.sessionsTotal > maxSessions {
		return fmt.Errorf("-sessions-total %d must be between 1 and %d", c.sessionsTotal, maxSessions)
	}
	if c.sessionsPerAddress < 1 || c.sessionsPerAddress > c.sessionsTotal {
		return fmt.Errorf("-sessions-per-address %d must be between 1 and -sessions-total (%d)",
			c.sessionsPerAddress, c.sessionsTotal)
	}
	if c.stepBudget < 10*time.Millisecond || c.stepBudget > 10*time.Minute {
		return fmt.Errorf("-step-budget %v must be between 10ms and 10m", c.stepBudget)
	}
	return nil
}

// access settles where the service listens and with what admin token:
// -admin-token, else the environment's; with classroom, the machine's
// network address and a generated token. A non-loopback address needs a
// token.
func (c *config) access(classroom bool) error {
	if c.adminToken == "" {
		c.adminToken = os.Getenv(envAdminToken)
	}
	if classroom {
		room, err := newClassroom(c.addr, c.adminToken)
		if err != nil {
			return err
		}
		c.room = room
		c.addr, c.adminToken = room.addr, room.token
	}
	loopback, err := loopbackAddr(c.addr)
	if err != nil {
		return err
	}
	c.loopback = loopback
	if !loopback && c.adminToken == "" {
		return fmt.Errorf("-addr %s is not a loopback address: anyone who can reach it could change "+
			"the service; set an admin token with -admin-token or %s, or listen on 127.0.0.1", c.addr, envAdminToken)
	}
	return nil
}
