package redisserver_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/lockmarket/lockmarket/internal/redis/redisserver"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestOverSocket: a private server, plain or confined, listens on a unix
// socket in its directory that only its user may open; a client made by
// OverSocket talks to the same server over it, as the same user, and
// sees what a TCP client wrote.
func TestOverSocket(t *testing.T) {
	redistest.RequireServer(t)
	ctx := context.Background()
	c := redisserver.Confinement{MaxMemory: 8 << 20, Heap: 64 << 20, MaxString: 1 << 20}
	for _, tc := range []struct {
		name string
		opts redisserver.Options
	}{
		{"plain", redisserver.Options{}},
		{"confined", redisserver.Options{Confine: &c}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := redisserver.Start(ctx, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Stop()
			sock := srv.Socket()
			if sock == "" || !strings.HasPrefix(sock, srv.Dir()) {
				t.Fatalf("Socket() = %q; want a path in %s", sock, srv.Dir())
			}
			fi, err := os.Stat(sock)
			if err != nil || fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o700 {
				t.Fatalf("the socket %s: %v, %v; want a socket, mode 0700", sock, fi, err)
			}
			tcp := redis.NewClient(srv.ClientOptions())
			defer tcp.Close()
			o := srv.OverSocket(srv.ClientOptions())
			if o.Network != "unix" || o.Addr != sock {
				t.Fatalf("OverSocket: network %q, address %q; want unix, %s", o.Network, o.Addr, sock)
			}
			over := redis.NewClient(o)
			defer over.Close()
			if err := tcp.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if got, err := over.Get(ctx, "k").Result(); got != "v" || err != nil {
				t.Errorf("GET over the socket: %q, %v; want v", got, err)
			}
			admin := redis.NewClient(srv.OverSocket(srv.AdminOptions()))
			defer admin.Close()
			info, err := admin.ClientInfo(ctx).Result()
			if err != nil || !strings.Contains(info.LAddr, sock) {
				t.Errorf("CLIENT INFO over the socket: %+v, %v; want its local address %s", info, err, sock)
			}
		})
	}
}
