package exploretest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/lockmarket/lockmarket/explore"
)

func TestShardOf(t *testing.T) {
	for _, tc := range []struct {
		total, index string
		want         explore.Shard
		bad          bool
	}{
		{"", "", explore.Shard{}, false},
		{"2", "1", explore.Shard{Index: 1, Count: 2}, false},
		{"4", "0", explore.Shard{Index: 0, Count: 4}, false},
		{"1", "0", explore.Shard{Index: 0, Count: 1}, false},
		{"2", "2", explore.Shard{}, true},
		{"2", "", explore.Shard{}, true},
		{"", "0", explore.Shard{}, true},
		{"0", "0", explore.Shard{}, true},
		{"two", "1", explore.Shard{}, true},
		{"3", "-1", explore.Shard{}, true},
	} {
		got, err := shardOf(tc.total, tc.index)
		if (err != nil) != tc.bad || got != tc.want {
			t.Errorf("TEST_TOTAL_SHARDS=%q TEST_SHARD_INDEX=%q: %+v, %v; want %+v (an error: %v)",
				tc.total, tc.index, got, err, tc.want, tc.bad)
		}
	}
}

// TestSharded: the runner's variables set the shard of an exhaustive
// search, not of a random one, and the status file is touched.
func TestSharded(t *testing.T) {
	status := filepath.Join(t.TempDir(), "status")
	t.Setenv("TEST_SHARD_STATUS_FILE", status)
	t.Setenv("TEST_TOTAL_SHARDS", "3")
	t.Setenv("TEST_SHARD_INDEX", "2")
	if o := Sharded(t, explore.Options{}); o.Shard != (explore.Shard{Index: 2, Count: 3}) {
		t.Errorf("exhaustive: shard %+v, want 2 of 3", o.Shard)
	}
	if _, err := os.Stat(status); err != nil {
		t.Errorf("the status file: %v", err)
	}
	if o := Sharded(t, explore.Options{Mode: explore.Random}); o.Shard != (explore.Shard{}) {
		t.Errorf("random: shard %+v, want none", o.Shard)
	}
	t.Setenv("TEST_TOTAL_SHARDS", "")
	t.Setenv("TEST_SHARD_INDEX", "")
	if o := Sharded(t, explore.Options{}); o.Shard != (explore.Shard{}) {
		t.Errorf("no variables: shard %+v, want none", o.Shard)
	}
}
