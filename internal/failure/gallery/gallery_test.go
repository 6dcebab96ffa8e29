package gallery_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/lockmarket/lockmarket/internal/failure/gallery"
	"github.com/lockmarket/lockmarket/internal/flawed"
	"github.com/lockmarket/lockmarket/internal/testsupport/redistest"
)

// TestEveryFlawShowsAndEveryFixHolds keeps the gallery honest: each flawed
// recipe must break something under its fault, and its fix nothing; and
// each run's recorded timeline holds the recipe's characteristic steps in
// order (checkTimelines), from the same run.
func TestEveryFlawShowsAndEveryFixHolds(t *testing.T) {
	t.Parallel() // servers of its own
	redistest.RunParallel(t, func(t *testing.T, b *redistest.Backend) {
		env := gallery.Env{Client: b.Client, Mini: b.Mini}
		for _, s := range gallery.Scenarios() {
			t.Run(s.Recipe.String(), func(t *testing.T) {
				row, err := s.Run(context.Background(), env)
				if err != nil {
					t.Fatal(err)
				}
				if row.Violations == 0 {
					t.Errorf("flawed recipe showed no violation under %q", row.Fault)
				}
				if row.FixedViolations != 0 {
					t.Errorf("%s still shows %d violations: %v", row.FixedBy, row.FixedViolations, row.FixedDetails)
				}
				t.Logf("%d violations (%v); fixed: %d", row.Violations, row.Details, row.FixedViolations)
				checkTimelines(t, row)
			})
		}
		// Every run deletes its keys.
		if n := b.Client.DBSize(context.Background()).Val(); n != 0 {
			t.Errorf("%d keys left behind", n)
		}
	})
}

// TestScenariosFollowTheCatalogue: the gallery stages every recipe of the
// catalogue, in its order, and finds each by its ID.
func TestScenariosFollowTheCatalogue(t *testing.T) {
	var ids []string
	for _, s := range gallery.Scenarios() {
		ids = append(ids, s.Recipe.ID)
		if got, err := gallery.ScenarioOf(s.Recipe.ID); err != nil || got.Recipe != s.Recipe {
			t.Errorf("ScenarioOf(%q) = %v, %v", s.Recipe.ID, got.Recipe, err)
		}
	}
	if want := flawed.RecipeIDs(); !slices.Equal(ids, want) {
		t.Errorf("the gallery stages recipes %v, the catalogue lists %v", ids, want)
	}
	if _, err := gallery.ScenarioOf("7"); !errors.Is(err, flawed.ErrUnknownRecipe) {
		t.Errorf("ScenarioOf(7): %v, want flawed.ErrUnknownRecipe", err)
	}
}

// TestGalleryOnRedisCluster runs the gallery on a three-master cluster,
// where every key of a scenario must share its market's slot.
func TestGalleryOnRedisCluster(t *testing.T) {
	rdb, _ := redistest.Cluster(t, 3)
	rows, err := gallery.RunAll(context.Background(), gallery.Env{Client: rdb})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Violations == 0 || r.FixedViolations != 0 {
			t.Errorf("%s: %d violations, fixed %d (%v)", r.Recipe, r.Violations, r.FixedViolations, r.FixedDetails)
		}
	}
}
