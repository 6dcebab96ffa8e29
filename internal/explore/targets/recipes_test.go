package targets_test

import (
	"testing"

	"github.com/lockmarket/lockmarket/internal/explore/targets"
)

// TestEveryRecipeHasATarget: each recipe of the catalogue is a target,
// flawed and fixed, named by its ID; an ID the catalogue lacks is not.
func TestEveryRecipeHasATarget(t *testing.T) {
	if len(targets.Recipes()) == 0 {
		t.Fatal("no recipes")
	}
	for _, n := range targets.Recipes() {
		for _, fixed := range []bool{false, true} {
			tg, err := targets.Recipe(n, fixed)
			if err != nil {
				t.Fatalf("recipe %s (fixed %v): %v", n, fixed, err)
			}
			if want := "recipe " + n; tg.Name != want && tg.Name != want+" fixed" {
				t.Errorf("recipe %s (fixed %v) is named %q", n, fixed, tg.Name)
			}
		}
	}
	for _, n := range []string{"7", "", "1 GET then SET"} {
		if _, err := targets.Recipe(n, false); err == nil {
			t.Errorf("recipe %q: no error", n)
		}
	}
}
