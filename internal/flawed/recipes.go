package flawed

import (
	"errors"
	"fmt"
	"strings"
)

// Recipe is one lock recipe of the series the articles behind this
// project walk through, by the number they give it. The gallery stages
// each one's failure in the market, the explorer finds it by searching
// the interleavings, the lab runs the gallery's scenarios over HTTP and
// the command line names them by ID. Recipe 6 is the correct
// locking.Mutex, in the series for the failure that fencing alone
// removes; the others are the types of this package.
type Recipe struct {
	// ID is the recipe's number ("1", "4", "11"): what the command line's
	// -recipe, -recipes and -timeline and the "recipe" field of the HTTP
	// requests take.
	ID string
	// Name says what the recipe does, in a few words ("GET then SET").
	Name string
}

// String is the recipe as tables and timelines show it: its ID, then
// its name ("1 GET then SET").
func (r Recipe) String() string { return r.ID + " " + r.Name }

// MarshalText writes the recipe as String does, so that it reads in JSON
// as it does in a table.
func (r Recipe) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a recipe written by MarshalText: one of Recipes.
func (r *Recipe) UnmarshalText(b []byte) error {
	for _, x := range recipes {
		if x.String() == string(b) {
			*r = x
			return nil
		}
	}
	return fmt.Errorf("%w %q", ErrUnknownRecipe, b)
}

// ErrUnknownRecipe is returned for an ID (or a name) that no recipe has.
var ErrUnknownRecipe = errors.New("flawed: unknown recipe")

// recipes is the catalogue, in the order of the series.
var recipes = []Recipe{
	{"1", "GET then SET"},
	{"2", "SETNX, no expiry"},
	{"3", "SETNX then EXPIRE"},
	{"4", "SET NX PX + DEL"},
	{"5", "GET, compare, DEL"},
	{"6", "SET NX PX + token script"},
	{"9", "seed read-write lock"},
	{"11", "book lock with timeout"},
}

// RecipeIDs returns the IDs of the recipes, in the order of the series.
func RecipeIDs() []string {
	ids := make([]string, len(recipes))
	for i, r := range recipes {
		ids[i] = r.ID
	}
	return ids
}

// RecipeByID returns the recipe whose ID is id; an error wrapping
// ErrUnknownRecipe, which lists the IDs there are, when there is none.
func RecipeByID(id string) (Recipe, error) {
	for _, r := range recipes {
		if r.ID == id {
			return r, nil
		}
	}
	return Recipe{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownRecipe, id, strings.Join(RecipeIDs(), ", "))
}
