package httpapi

import (
	"crypto/subtle"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
)

// The service's security baseline. The threat model (docs/service.md): on
// its default loopback bind, the service is reached by programs of the
// same machine and by the web pages its browsers open, which can send
// requests to it without reading the answers. So:
//   - a JSON endpoint takes only a JSON body (415 otherwise): a page can
//     send a text/plain or form body without a preflight, never a JSON one;
//   - a write (any method but GET, HEAD, OPTIONS) whose Origin is not the
//     service's own is refused (403); requests without Origin (curl,
//     programs) pass;
//   - with Config.LoopbackHosts, a request whose Host is not a loopback
//     name or address is refused (403): a page on a name that resolves to
//     the loopback address (DNS rebinding) would be its own origin;
//   - the routes that change the service rather than the market (the
//     default strategy, the rush, the lab, explorer sessions) take
//     Config.AdminToken, when one is set, as "Authorization: Bearer
//     TOKEN" (401 otherwise); the command requires one on a non-loopback
//     bind;
//   - expensive reads are rate limited (429 + Retry-After, see rateLimit),
//     and the lab has a body and concurrency budget (see budget).

// requireJSON refuses a body of a write that is not declared JSON
// (Content-Type application/json, parameters allowed). A write that
// declares neither a type nor a length of its body passes: the handler says
// what it lacks (a browser sends the length of every body it can send
// without a preflight).
func requireJSON(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if safeMethod(req.Method) || (req.ContentLength <= 0 && req.Header.Get(echo.HeaderContentType) == "") {
			return next(c)
		}
		mt, _, err := mime.ParseMediaType(req.Header.Get(echo.HeaderContentType))
		if err != nil || mt != echo.MIMEApplicationJSON {
			return &Error{Status: http.StatusUnsupportedMediaType, Code: CodeUnsupportedMedia,
				Message: "the request body must be JSON, sent with Content-Type: application/json"}
		}
		return next(c)
	}
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

// sameOrigin refuses a write whose Origin header is present and is not
// the service's own (scheme and Host of the request), and, with
// Config.LoopbackHosts, any request whose Host is not a loopback name.
func (s *Server) sameOrigin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		req := c.Request()
		if s.cfg.LoopbackHosts && !loopbackHost(req.Host) {
			return &Error{Status: http.StatusForbidden, Code: CodeForbidden,
				Message: "the service answers only requests addressed to a loopback host (localhost, or a loopback " +
					"address: 127.0.0.1 or any 127.x.x.x, [::1])"}
		}
		origin := req.Header.Get(echo.HeaderOrigin)
		if safeMethod(req.Method) || origin == "" {
			return next(c)
		}
		scheme := "http"
		if req.TLS != nil {
			scheme = "https"
		}
		if u, err := url.Parse(origin); err != nil || u.Scheme != scheme || !strings.EqualFold(u.Host, req.Host) {
			return &Error{Status: http.StatusForbidden, Code: CodeForbidden,
				Message: "cross-origin writes are refused: Origin " + origin + " is not this service's"}
		}
		return next(c)
	}
}

// loopbackHost reports whether a Host header names the loopback
// interface: localhost or a loopback address, with or without a port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// admin guards a route that changes the service rather than the market:
// with Config.AdminToken set, it requires "Authorization: Bearer TOKEN".
// Without one (allowed on a loopback bind only, see cmd/market) the route
// is open to the requests sameOrigin lets through.
func (s *Server) admin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if s.cfg.AdminToken == "" {
			return next(c)
		}
		got, ok := strings.CutPrefix(c.Request().Header.Get(echo.HeaderAuthorization), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.AdminToken)) != 1 {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="lockmarket"`)
			return &Error{Status: http.StatusUnauthorized, Code: CodeUnauthorized,
				Message: "this route changes the service: send the admin token as Authorization: Bearer TOKEN"}
		}
		return next(c)
	}
}
