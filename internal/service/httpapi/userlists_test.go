package httpapi

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestUserListsForARoom: a room's pages reading the users list again and
// again (far past the scans' burst) are all answered, from one scan a
// second; a user created is in the next answer; requests that each ask
// for another page still meet the scans' rate.
func TestUserListsForARoom(t *testing.T) {
	f := newFixture(t, redistest.Mini(t))
	h := f.srv.Handler()
	list := func(path string) (int, int) {
		t.Helper()
		r := serve(h, "GET", path, "")
		var body struct{ Total int }
		if r.status == http.StatusOK {
			r.decode(t, &body)
		}
		return r.status, body.Total
	}
	for i := range 4 * UserScanBurst {
		if status, total := list("/api/users?limit=500"); status != http.StatusOK || total != 3 {
			t.Fatalf("read %d of the same list: %d, %d users; want 200, 3", i+1, status, total)
		}
	}
	if r := serve(h, "POST", "/api/users", `{"name":"Dave","funds":5}`); r.status != http.StatusCreated {
		t.Fatalf("create a user: %d %s", r.status, r.body)
	}
	if _, total := list("/api/users?limit=500"); total != 4 {
		t.Errorf("after a user was created: %d users, want 4", total)
	}
	limited := 0
	for i := range 4 * UserScanBurst {
		if status, _ := list(fmt.Sprintf("/api/users?offset=%d", i)); status == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited == 0 {
		t.Errorf("%d reads of as many pages: none limited, want the scans' rate (%d/s, burst %d)",
			4*UserScanBurst, UserScanRate, UserScanBurst)
	}
}
