package docs_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockmarket/lockmarket/internal/service/exploresession"
	"github.com/lockmarket/lockmarket/internal/service/httpapi"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
	"github.com/lockmarket/lockmarket/market"
)

// A routes table ("<!-- table: routes -->") has a request and an answer
// per row. The request begins with `METHOD /path`; the answer is clauses
// separated by "; ", each beginning with the status it documents. Every
// JSON object in backticks is an example request body: in the request,
// for the first clause's status; in a clause, for that clause's status.
var (
	routeRE  = regexp.MustCompile("^`(GET|HEAD|POST|PUT|DELETE) (/[^`]*)`")
	statusRE = regexp.MustCompile(`^(\d{3})\b`)
	tickedRE = regexp.MustCompile("`([^`]*)`")
)

// routeProbe is one documented example: a request and the status the
// documentation says it gets.
type routeProbe struct {
	method, path, body string
	status             int
	clause             string // where the documentation says so
}

// routeProbes reads the probes of one routes table row.
func routeProbes(t *testing.T, row []string) []routeProbe {
	t.Helper()
	if len(row) < 2 {
		t.Fatalf("routes row %q: want request, answer", row)
	}
	m := routeRE.FindStringSubmatch(row[0])
	if m == nil {
		t.Fatalf("routes row %q: the request does not begin with `METHOD /path`", row[0])
	}
	method, path := m[1], m[2]
	var probes []routeProbe
	hasExample := false
	clauses := strings.Split(row[1], "; ")
	for i, clause := range clauses {
		s := statusRE.FindStringSubmatch(clause)
		if s == nil {
			t.Errorf("routes row %q: clause %q does not begin with a status", row[0], clause)
			continue
		}
		status, _ := strconv.Atoi(s[1])
		text := clause
		if i == 0 {
			text = row[0] + " " + clause // the request's examples get the first status
		}
		n := 0
		for _, ex := range examples(text) {
			probes = append(probes, routeProbe{method, path, ex, status, clause})
			n++
		}
		hasExample = hasExample || n > 0
		// A documented refusal of a body can be checked only with an
		// example of that body.
		if status == http.StatusBadRequest && n == 0 && len(examples(row[0])) > 0 {
			t.Errorf("routes row %q: clause %q documents a 400 without an example request", row[0], clause)
		}
	}
	if !hasExample && method != http.MethodPost && method != http.MethodPut {
		// A route without a body is probed as it is, for its first status.
		s := statusRE.FindStringSubmatch(clauses[0])
		if s != nil {
			status, _ := strconv.Atoi(s[1])
			probes = append(probes, routeProbe{method, path, "", status, clauses[0]})
		}
	}
	return probes
}

// examples are the JSON objects in backticks in text.
func examples(text string) []string {
	var out []string
	for _, m := range tickedRE.FindAllStringSubmatch(text, -1) {
		var v map[string]any
		if strings.HasPrefix(m[1], "{") && json.Unmarshal([]byte(m[1]), &v) == nil {
			out = append(out, m[1])
		}
	}
	return out
}

// TestRouteStatuses sends every documented example of the routes tables
// to the service (on miniredis, with its explorer sessions) and checks that
// it answers with the documented status: a status the service does not
// give for the request it is documented for fails the test. A path's :id
// is a fresh explorer session's; a session a probe makes is removed after.
// The examples of pasted Lua the service accepts need redis-server for
// their sandbox: without it their subtest is skipped, saying so.
func TestRouteStatuses(t *testing.T) {
	tables := markedTables(t)["routes"]
	if len(tables) == 0 {
		t.Fatal("no table marked routes")
	}
	b := redistest.Mini(t)
	m, err := market.New(b.Client, "docsroutes")
	if err != nil {
		t.Fatal(err)
	}
	// A pasted lock's start, bounded where no machine's load runs it out
	// (the default is 2 s).
	sessions := exploresession.New(exploresession.Config{StepBudget: time.Minute})
	srv, err := httpapi.New(httpapi.Config{Market: m, Explore: sessions})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)

	send := func(method, path, body string) (int, http.Header, string) {
		t.Helper()
		req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		res, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		got, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header, string(got)
	}
	session := func() string {
		t.Helper()
		status, h, body := send("POST", "/api/explore/sessions", `{"recipe":"1"}`)
		if status != http.StatusCreated {
			t.Fatalf("a session for a probe: %d %s", status, body)
		}
		return h.Get("Location")
	}

	probe := func(t *testing.T, p routeProbe) {
		t.Helper()
		path := p.path
		var made string
		if strings.Contains(path, ":id") {
			made = session()
			path = strings.Replace(path, "/api/explore/sessions/:id", made, 1)
		}
		status, h, body := send(p.method, path, p.body)
		if status != p.status {
			t.Errorf("%s %s %s: the service answers %d %s; the docs say %q",
				p.method, p.path, p.body, status, short(body), p.clause)
		}
		for _, loc := range []string{h.Get("Location"), made} {
			if loc != "" && status != http.StatusNoContent {
				send("DELETE", loc, "")
			}
		}
	}
	var probes, sandboxed []routeProbe
	for _, table := range tables {
		for _, row := range table {
			for _, p := range routeProbes(t, row) {
				if needsSandbox(p) {
					sandboxed = append(sandboxed, p)
				} else {
					probes = append(probes, p)
				}
			}
		}
	}
	if len(probes)+len(sandboxed) == 0 {
		t.Error("the routes tables have no example to send")
	}
	for _, p := range probes {
		probe(t, p)
	}
	t.Logf("%d documented examples sent", len(probes))
	// A pasted lock runs on a sandbox, a redis-server the service starts
	// for it: without one the service refuses it (400, saying so), as
	// docs/lab.md says beside the table.
	t.Run("pasted Lua", func(t *testing.T) {
		redistest.RequireServer(t)
		for _, p := range sandboxed {
			probe(t, p)
		}
		t.Logf("%d documented examples of pasted Lua sent", len(sandboxed))
	})
}

// needsSandbox reports whether the documented answer to p needs a
// sandbox: an accepted request for pasted Lua.
func needsSandbox(p routeProbe) bool {
	var body map[string]json.RawMessage
	if json.Unmarshal([]byte(p.body), &body) != nil {
		return false
	}
	_, lua := body["lua"]
	return lua && p.status < http.StatusBadRequest
}

// short is body's first 200 bytes.
func short(body string) string {
	body = strings.TrimSpace(body)
	if len(body) > 200 {
		return body[:200] + "..."
	}
	return body
}

// TestReadWording: the service's page quotes the wording of a read's
// Redis 503 (a write's is in the error codes table).
func TestReadWording(t *testing.T) {
	msg := httpapi.ReadErrorFor(syscall.ECONNREFUSED).Message
	_, words, ok := strings.Cut(msg, ": ")
	if !ok {
		t.Fatalf("read message %q: want WHAT: WORDING", msg)
	}
	service := read(t, filepath.Join(root, "docs", "service.md"))
	if !strings.Contains(strings.Join(strings.Fields(service), " "), words) {
		t.Errorf("docs/service.md does not quote a read's 503 wording %q", words)
	}
}
