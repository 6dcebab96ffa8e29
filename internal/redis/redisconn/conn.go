// Package redisconn resolves the "-redis" flag shared by the commands:
// "auto", a redis:// URL, or a comma-separated list of cluster nodes.
package redisconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/report/output"
)

// Modes reported by Conn.Mode.
const (
	ModeURL         = "url"          // a URL given by flag or REDIS_URL
	ModeCluster     = "cluster"      // a list of cluster nodes
	ModeRedisServer = "redis-server" // a private child redis-server
	ModeMiniredis   = "miniredis"    // the embedded in-process fallback
)

// Conn is a resolved connection and whatever was started to serve it.
type Conn struct {
	// Client is the connection; it is closed by Close.
	Client redis.UniversalClient
	// Mode is one of the Mode constants.
	Mode string
	// Version is the server's redis_version ("miniredis" for the fallback).
	Version string
	// Server is the private redis-server when Mode is ModeRedisServer.
	Server *redisserver.Server
	// Mini is the embedded server when Mode is ModeMiniredis.
	Mini *miniredis.Miniredis
}

// Illustrative reports whether figures measured on this connection mean
// little (miniredis serves one command at a time, in process).
func (c *Conn) Illustrative() bool { return c.Mode == ModeMiniredis }

// Env is the environment block of a document measured on this
// connection, on this machine.
func (c *Conn) Env() output.Env { return output.NewEnv(c.Mode, c.Version) }

// Close closes the client and stops anything that Open started.
func (c *Conn) Close() error {
	err := c.Client.Close()
	if c.Server != nil {
		c.Server.Stop()
	}
	if c.Mini != nil {
		c.Mini.Close()
	}
	return err
}

// Open resolves spec. "auto" (or "") tries, in order, REDIS_URL, a private
// redis-server from PATH, and an embedded miniredis, and says on log which
// it chose. A value with "://" is parsed as a URL; anything else is a
// comma-separated list of host:port (one address is a plain client, more
// than one a cluster client).
func Open(ctx context.Context, spec string, log io.Writer) (*Conn, error) {
	if log == nil {
		log = io.Discard
	}
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "auto" {
		if u := os.Getenv("REDIS_URL"); u != "" {
			c, err := openURL(ctx, u)
			if err == nil {
				fmt.Fprintf(log, "redis: using REDIS_URL (%s, version %s)\n", redact(u), c.Version)
			}
			return c, err
		}
		srv, err := redisserver.Start(ctx, redisserver.Options{})
		if err == nil {
			c := &Conn{Client: newClient(srv.Addr()), Mode: ModeRedisServer, Server: srv}
			c.Version = redisserver.Version(ctx, c.Client)
			fmt.Fprintf(log, "redis: started a private redis-server %s on %s (persistence off)\n", c.Version, srv.Addr())
			return c, nil
		}
		if !errors.Is(err, redisserver.ErrNoBinary) {
			fmt.Fprintf(log, "redis: could not start redis-server: %v\n", err)
		}
		mini := miniredis.NewMiniRedis()
		if err := mini.Start(); err != nil {
			return nil, fmt.Errorf("redis: embedded miniredis: %w", err)
		}
		fmt.Fprintf(log, "redis: no redis-server on PATH and no REDIS_URL; using embedded miniredis on %s\n"+
			"redis: miniredis runs one command at a time in this process: figures are illustrative only\n", mini.Addr())
		c := newClient(mini.Addr())
		c.AddHook(MiniWatchHook{})
		return &Conn{Client: c, Mode: ModeMiniredis, Version: "miniredis", Mini: mini}, nil
	}
	if strings.Contains(spec, "://") {
		c, err := openURL(ctx, spec)
		if err == nil {
			fmt.Fprintf(log, "redis: using %s (version %s)\n", redact(spec), c.Version)
		}
		return c, err
	}
	addrs := strings.Split(spec, ",")
	for i, a := range addrs {
		addrs[i] = strings.TrimSpace(a)
		if addrs[i] == "" || !strings.Contains(addrs[i], ":") {
			return nil, fmt.Errorf("redis: %q is not auto, a redis:// URL or a host:port list: %w", spec, ErrSpec)
		}
	}
	var c *Conn
	if len(addrs) == 1 {
		c = &Conn{Client: newClient(addrs[0]), Mode: ModeURL}
	} else {
		c = &Conn{Client: redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, PoolSize: PoolSize, MaxRetries: maxRetries,
			ReadBufferSize: bufferSize, WriteBufferSize: bufferSize}), Mode: ModeCluster}
	}
	if err := c.Client.Ping(ctx).Err(); err != nil {
		c.Client.Close()
		return nil, fmt.Errorf("redis: %s: %w", spec, err)
	}
	c.Version = redisserver.Version(ctx, c.Client)
	fmt.Fprintf(log, "redis: using %s (%s, version %s)\n", spec, c.Mode, c.Version)
	return c, nil
}

// PoolSize is the connection pool of the clients Open makes. A
// transaction holds its connection from WATCH to EXEC, and a lock
// strategy holds it while it waits for its lock, so a pool smaller than
// the number of concurrent workers would make them queue for connections
// instead of for Redis. Connections are dialled only when needed.
const PoolSize = 512

// The clients Open makes never resend a command on their own
// (MaxRetries -1). A resent write whose first reply was lost would be
// applied, or refused, a second time: a purchase that happened would be
// answered "listing not found". Without resends a lost reply surfaces as
// an error, an outcome the caller knows to be unknown.
const maxRetries = -1

// bufferSize is the read and the write buffer of each pooled connection
// of the clients Open makes (go-redis's default is 32 KiB each). The
// market's commands and replies are a few hundred bytes; a larger reply
// (an audit's snapshot) is read through the buffer in pieces. With up to
// PoolSize connections, and a burst of reconnections after Redis drops
// them, 64 KiB per connection was most of the service's heap.
const bufferSize = 8 << 10

func newClient(addr string) *redis.Client {
	return newClientOf(&redis.Options{Addr: addr})
}

// newClientOf is a client of the options o gives (an address, a
// password), with Open's pool, resends and buffers.
func newClientOf(o *redis.Options) *redis.Client {
	o.PoolSize, o.MaxRetries = PoolSize, maxRetries
	o.ReadBufferSize, o.WriteBufferSize = bufferSize, bufferSize
	return redis.NewClient(o)
}

// ErrNoConfined is returned by OpenConfined for "auto" when no
// redis-server can be started: code its user did not write runs on
// nothing else unless named.
var ErrNoConfined = errors.New("no redis-server on PATH to confine it in")

// OpenConfined is Open for code its user did not write (a recipe's
// scripts). "auto" (or "") starts a private redis-server confined as c
// says (redisserver.Confinement), whose address is known to this process
// only: never REDIS_URL, nor the embedded miniredis (whose Lua runs in
// this process). Any other spec is Open's: a server named explicitly,
// used as it is.
func OpenConfined(ctx context.Context, spec string, c redisserver.Confinement, log io.Writer) (*Conn, error) {
	if log == nil {
		log = io.Discard
	}
	if s := strings.TrimSpace(spec); s != "" && s != "auto" {
		return Open(ctx, spec, log)
	}
	srv, err := redisserver.Start(ctx, redisserver.Options{Confine: &c})
	if errors.Is(err, redisserver.ErrNoBinary) {
		return nil, fmt.Errorf("redis: %w (install redis-server, or name a server with -redis)", ErrNoConfined)
	}
	if err != nil {
		return nil, fmt.Errorf("redis: could not start a confined redis-server: %w", err)
	}
	conn := &Conn{Client: newClientOf(srv.ClientOptions()), Mode: ModeRedisServer, Server: srv}
	admin := redis.NewClient(srv.AdminOptions())
	conn.Version = redisserver.Version(ctx, admin)
	admin.Close()
	fmt.Fprintf(log, "redis: started a confined private redis-server %s on %s (persistence off)\n"+
		"redis: it asks a password, refuses all but data commands on one database, holds %d MiB\n",
		conn.Version, srv.Addr(), c.MaxMemory>>20)
	return conn, nil
}

// ErrSpec is wrapped by Open's error when the -redis value itself is
// malformed (as opposed to a server that cannot be reached): a usage
// mistake.
var ErrSpec = errors.New("malformed Redis address")

func openURL(ctx context.Context, u string) (*Conn, error) {
	opts, err := redis.ParseURL(u)
	if err != nil {
		return nil, fmt.Errorf("redis: %s: %w: %w", redact(u), ErrSpec, err)
	}
	if opts.PoolSize == 0 {
		opts.PoolSize = PoolSize
	}
	opts.MaxRetries = maxRetries
	if opts.ReadBufferSize == 0 {
		opts.ReadBufferSize = bufferSize
	}
	if opts.WriteBufferSize == 0 {
		opts.WriteBufferSize = bufferSize
	}
	c := &Conn{Client: redis.NewClient(opts), Mode: ModeURL}
	if err := c.Client.Ping(ctx).Err(); err != nil {
		c.Client.Close()
		return nil, fmt.Errorf("redis: %s: %w", redact(u), err)
	}
	c.Version = redisserver.Version(ctx, c.Client)
	return c, nil
}

// redact hides a password in a URL before it is printed.
func redact(u string) string {
	at := strings.LastIndex(u, "@")
	scheme := strings.Index(u, "://")
	if at < 0 || scheme < 0 || at < scheme {
		return u
	}
	return u[:scheme+3] + "***" + u[at:]
}
