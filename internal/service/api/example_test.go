package api_test

import (
	"errors"
	"fmt"

	"github.com/lockmarket/lockmarket/internal/service/api"
)

// A runner refuses a request it cannot run with an error that wraps
// ErrInvalid; the handler answers it with 400 and the message.
func ExampleInvalidf() {
	err := api.Invalidf("recipe %q: want one of %s", "99", "1, 2, 3")
	fmt.Println(errors.Is(err, api.ErrInvalid))
	fmt.Println(err)
	// Output:
	// true
	// invalid request: recipe "99": want one of 1, 2, 3
}
