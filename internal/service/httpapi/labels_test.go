package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestRequestLabelsBounded floods the service with invented methods and
// raw paths: the series of lockmarket_http_requests_total stay a few, each
// route a template, whatever the requests were.
func TestRequestLabelsBounded(t *testing.T) {
	f := newFixture(t, redistest.Mini(t))
	h := f.srv.Handler()
	for i := range 3000 {
		serve(h, fmt.Sprintf("X%dMETHOD", i), fmt.Sprintf("/api/users/u%d", i), "")
		serve(h, http.MethodGet, fmt.Sprintf("/no/such/path/%d", i), "")
		serve(h, http.MethodGet, fmt.Sprintf("/api/users/u%d/purchases", i%20), "")
	}
	text := string(serve(h, http.MethodGet, "/metrics", "").body)
	var series []string
	for l := range strings.Lines(text) {
		if strings.HasPrefix(l, "lockmarket_http_requests_total{") {
			series = append(series, l)
		}
	}
	if len(series) == 0 || len(series) > 20 {
		t.Fatalf("%d series of lockmarket_http_requests_total after 9000 requests, want 1-20", len(series))
	}
	for _, l := range series {
		if strings.Contains(l, `method="X`) {
			t.Errorf("%s: an invented method became a series", strings.TrimSpace(l))
		}
		if strings.Contains(l, `/u1`) || strings.Contains(l, "/no/such") {
			t.Errorf("%s: a raw path, not a route template", strings.TrimSpace(l))
		}
	}
}
