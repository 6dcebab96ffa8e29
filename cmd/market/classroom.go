package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
)

// classroomStart is how "market -classroom" listens: on this machine's
// network address, so that the students' machines reach it, with an admin
// token the teacher keeps.
type classroomStart struct {
	addr  string
	token string
	// generated says the token was made here, not given.
	generated bool
}

// errNoNetwork is returned when the machine has no network address other
// than loopback.
var errNoNetwork = errors.New("no network address other than loopback")

// newClassroom returns the classroom start for -addr addr: the machine's
// network address on addr's port, unless addr already names a host that
// is not loopback; and token, or a generated one when token is "".
func newClassroom(addr, token string) (*classroomStart, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("-addr %q: %w", addr, err)
	}
	if loopback, _ := loopbackAddr(addr); loopback || host == "" {
		ip, err := networkAddress()
		if err != nil {
			return nil, fmt.Errorf("-classroom: %w; give the address students reach with -addr HOST:PORT", err)
		}
		host = ip.String()
	}
	c := &classroomStart{addr: net.JoinHostPort(host, port), token: token}
	if c.token == "" {
		c.token, c.generated = rand.Text(), true
	}
	return c, nil
}

// networkAddress is the machine's address on its network: the first
// private IPv4 address of an interface that is up (a home or school
// network), else the first other unicast IPv4 address, else IPv6.
func networkAddress() (net.IP, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	var private, public, v6 net.IP
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok || !n.IP.IsGlobalUnicast() {
				continue
			}
			switch {
			case n.IP.To4() != nil && n.IP.IsPrivate() && private == nil:
				private = n.IP
			case n.IP.To4() != nil && public == nil:
				public = n.IP
			case n.IP.To4() == nil && v6 == nil:
				v6 = n.IP
			}
		}
	}
	for _, ip := range []net.IP{private, public, v6} {
		if ip != nil {
			return ip, nil
		}
	}
	return nil, errNoNetwork
}

// print says where students go and what the teacher keeps, for the
// server listening at at.
func (c *classroomStart) print(w io.Writer, at net.Addr) {
	port := ""
	if tcp, ok := at.(*net.TCPAddr); ok {
		port = strconv.Itoa(tcp.Port)
	}
	host, _, _ := net.SplitHostPort(c.addr)
	fmt.Fprintf(w, "market: classroom: students open http://%s/ (no token needed)\n", net.JoinHostPort(host, port))
	origin := "given with -admin-token or $" + envAdminToken
	if c.generated {
		origin = "generated for this run; keep it to yourself"
	}
	fmt.Fprintf(w, "market: classroom: the teacher's admin token (%s):\n%s\n", origin, c.token)
	fmt.Fprintf(w, "market: classroom: the page asks for it on the first admin action (strategy, rush, lab)\n")
}

// nextPort is addr with its port one higher, for a hint.
func nextPort(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	n, perr := strconv.Atoi(port)
	if err != nil || perr != nil || n >= 65535 {
		return "127.0.0.1:8081"
	}
	return net.JoinHostPort(host, strconv.Itoa(n+1))
}
