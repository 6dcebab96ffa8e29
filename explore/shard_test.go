package explore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/lockmarket/lockmarket/explore"
)

// TestShardOption: a shard that is not one of its count's, or of a
// search that is not exhaustive, is a bad option, found before the
// search starts.
func TestShardOption(t *testing.T) {
	target := &explore.Target{Client: func(context.Context, *explore.Client) error { return nil }}
	for _, o := range []explore.Options{
		{Shard: explore.Shard{Index: 2, Count: 2}},
		{Shard: explore.Shard{Index: -1, Count: 3}},
		{Shard: explore.Shard{Count: -1}},
		{Shard: explore.Shard{Index: 0, Count: 2}, Mode: explore.Random},
	} {
		_, err := explore.Check(context.Background(), nil, target, o)
		if !errors.Is(err, explore.ErrOption) {
			t.Errorf("%+v: %v, want ErrOption", o, err)
		}
	}
}
