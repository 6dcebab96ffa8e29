package main

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestTakenPortLeavesRedisAlone: -addr on a port another program holds
// exits with status 2 and a hint about -addr, before the demo data is
// seeded (Redis stays empty).
func TestTakenPortLeavesRedisAlone(t *testing.T) {
	b := redistest.Real(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	var stdout, stderr syncBuffer
	err = run(context.Background(), []string{"-addr", taken.Addr().String(), "-redis", b.Addr(), "-seed-demo"},
		&stdout, &stderr)
	var usage usageError
	if !errors.As(err, &usage) {
		t.Fatalf("err = %v, want a usage error (exit 2)", err)
	}
	if !strings.Contains(err.Error(), "the port is in use") || !strings.Contains(err.Error(), "use -addr with another port") {
		t.Errorf("error %q lacks the hint", err)
	}
	if n, err := b.Client.DBSize(context.Background()).Result(); err != nil || n != 0 {
		t.Errorf("Redis holds %d keys (%v): it was touched", n, err)
	}
	if stdout.String() != "" {
		t.Errorf("stdout: %s", stdout.String())
	}
}

func TestClassroomStart(t *testing.T) {
	c, err := newClassroom("127.0.0.1:8080", "")
	if errors.Is(err, errNoNetwork) {
		t.Skip("this machine has no network address but loopback")
	}
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(c.addr)
	if ip := net.ParseIP(host); ip == nil || ip.IsLoopback() || port != "8080" {
		t.Errorf("classroom address %s, want the machine's network address on port 8080", c.addr)
	}
	if !c.generated || len(c.token) < 20 {
		t.Errorf("token %q (generated %v), want a generated one of at least 20 characters", c.token, c.generated)
	}
	if other, _ := newClassroom("127.0.0.1:8080", ""); other != nil && other.token == c.token {
		t.Errorf("two classrooms got the same token %q", c.token)
	}
	var out strings.Builder
	c.print(&out, &net.TCPAddr{IP: net.ParseIP(host), Port: 8080})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := "market: classroom: students open http://" + net.JoinHostPort(host, "8080") + "/ (no token needed)"
	if len(lines) < 3 || lines[0] != want || lines[2] != c.token {
		t.Errorf("printed:\n%s\nwant first %q and the token alone on the third line", out.String(), want)
	}
	if strings.Contains(lines[0], c.token) {
		t.Errorf("the students' URL carries the token: %q", lines[0])
	}

	given, err := newClassroom("10.1.2.3:9000", "s3cret")
	if err != nil || given.addr != "10.1.2.3:9000" || given.token != "s3cret" || given.generated {
		t.Errorf("with a network -addr and a token: %+v, %v; want both kept", given, err)
	}
}
