package exploresession_test

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockmarket/lockmarket/internal/service/exploresession"
)

type counter struct{ n int }

func (c *counter) Close() error { return nil }

func ExampleStore() {
	st := exploresession.NewStore[*counter](exploresession.Limits{Total: 1, PerClient: 1}, time.Minute, nil)
	defer st.Close()
	id, _, _ := st.Add("127.0.0.1", func() (*counter, error) { return &counter{}, nil })
	st.Do(id, func(c *counter) error { c.n++; return nil })
	st.Do(id, func(c *counter) error { fmt.Println("steps:", c.n); return nil })
	_, _, err := st.Add("127.0.0.1", func() (*counter, error) { return &counter{}, nil })
	fmt.Println(errors.Is(err, exploresession.ErrBusy))
	// Output:
	// steps: 1
	// true
}
