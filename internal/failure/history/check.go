package history

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Anomaly is a kind of anomaly the history checkers find. A correct run
// shows none of any kind. Anomalies are not market.Violations, the
// invariants an audit reads from one state of the market: an anomaly is
// read from what the clients were told against what happened (a sale
// acknowledged and lost, a double sale whose money still adds up), which
// no single state shows.
type Anomaly int

// The kinds of anomaly, in the order Anomalies lists them.
const (
	// NotLinearizable: an item whose operations, with the final state,
	// have no linearization against the one-item model (porcupine).
	NotLinearizable Anomaly = iota
	// SoldTwice: a purchase that happened beyond the listings it could
	// have bought (one listing bought by two buyers counts 1).
	SoldTwice
	// LostSales: an acknowledged purchase whose item is not in the
	// buyer's inventory at the end.
	LostSales
	// FundsMismatch: a user whose final funds are not their starting
	// funds plus the credits and minus the debits of the purchases that
	// happened (a debit without its credit, a purchase applied partially).
	FundsMismatch

	numAnomalies
)

// anomalyNames are the kinds' names: their JSON keys.
var anomalyNames = [numAnomalies]string{"not_linearizable", "sold_twice", "lost_sales", "funds_mismatch"}

// String is the kind's name, its JSON key ("sold_twice").
func (a Anomaly) String() string {
	if a < 0 || a >= numAnomalies {
		return "anomaly(" + strconv.Itoa(int(a)) + ")"
	}
	return anomalyNames[a]
}

// Anomalies counts anomalies by kind: a[SoldTwice] is the number of
// purchases sold twice. It is written in JSON as an object keyed by the
// kinds' names, in their order.
type Anomalies [numAnomalies]int

// Total is the number of anomalies of every kind.
func (a Anomalies) Total() int {
	var n int
	for _, c := range a {
		n += c
	}
	return n
}

// Add adds o's counts to a's.
func (a *Anomalies) Add(o Anomalies) {
	for k, c := range o {
		a[k] += c
	}
}

// MarshalJSON writes a as {"not_linearizable":0,"sold_twice":1,...}.
func (a Anomalies) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for k, c := range a {
		if k > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, anomalyNames[k])
		b = append(b, ':')
		b = strconv.AppendInt(b, int64(c), 10)
	}
	return append(b, '}'), nil
}

// UnmarshalJSON reads what MarshalJSON writes. A key that names no kind
// is an error, and leaves a as it was; a kind left out counts zero.
func (a *Anomalies) UnmarshalJSON(b []byte) error {
	var m map[string]int
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	var out Anomalies
	for name, c := range m {
		k := slices.Index(anomalyNames[:], name)
		if k < 0 {
			return fmt.Errorf("history: %q names no kind of anomaly", name)
		}
		out[k] = c
	}
	*a = out
	return nil
}

// Report is the outcome of Check.
type Report struct {
	// Anomalies counts what the checkers found, by kind.
	Anomalies Anomalies `json:"anomalies"`
	Counts
	// Undecided counts items porcupine could not decide in its time.
	Undecided int `json:"undecided"`
	// Unresolved counts purchases of unknown outcome whose effect the final
	// state cannot tell (the buyer listed the item again); the funds of
	// their buyer and seller are then not checked.
	Unresolved int `json:"unresolved"`
	// Details describes the first violations found (at most 20).
	Details []string `json:"details,omitempty"`
}

// found counts n anomalies of kind a and describes them.
func (r *Report) found(a Anomaly, n int, format string, args ...any) {
	r.Anomalies[a] += n
	if len(r.Details) < 20 {
		r.Details = append(r.Details, fmt.Sprintf(format, args...))
	}
}

// CheckTimeout bounds porcupine's search over all items of one history.
var CheckTimeout = 20 * time.Second

// Check checks ops (a complete history: every operation completed or was
// abandoned before final was read) against the set-up and the final
// state. See the package documentation for what is checked.
func Check(setup Setup, ops []Op, final State) Report {
	var rep Report
	rep.Counts = Count(ops)
	checkLinearizable(&rep, setup, ops, final)
	checkMoney(&rep, setup, ops, final)
	return rep
}

// itemInput is a porcupine input: one operation on an item, or the final
// observation of where it is.
type itemInput struct {
	op      Op
	observe bool
}

// itemOutput is a porcupine output.
type itemOutput struct {
	outcome Outcome
	reason  Reason
	places  []string // observe: where the item was found
}

// itemModel is the sequential specification of one item: its state is the
// one place it is in ("inv:USER" or "mkt:SELLER:PRICE"). An unknown
// outcome steps to both "happened" and "did not happen".
var itemModel = porcupine.NondeterministicModel{
	Init: func() []any { return nil }, // replaced per item
	Step: func(state, input, output any) []any {
		st := state.(string)
		in := input.(itemInput)
		out := output.(itemOutput)
		if in.observe {
			if len(out.places) == 1 && out.places[0] == st {
				return []any{st}
			}
			return nil
		}
		var pre bool
		var next string
		switch in.op.Kind {
		case List:
			pre, next = st == placeInv(in.op.Seller), placeMkt(in.op.Seller, in.op.Price)
		case Purchase:
			pre, next = st == placeMkt(in.op.Seller, in.op.Price), placeInv(in.op.Buyer)
		}
		switch out.outcome {
		case Ok:
			if pre {
				return []any{next}
			}
			return nil
		case Unknown:
			if pre {
				return []any{next, st}
			}
			return []any{st}
		}
		// A refusal changes nothing; some refusals also claim something
		// about the item, which must hold.
		listedBySeller := strings.HasPrefix(st, "mkt:"+in.op.Seller+":")
		switch out.reason {
		case ReasonListingNotFound:
			if listedBySeller {
				return nil
			}
		case ReasonPriceChanged:
			if !listedBySeller || pre {
				return nil
			}
		case ReasonItemNotOwned:
			if st == placeInv(in.op.Seller) {
				return nil
			}
		}
		return []any{st}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(itemInput), output.(itemOutput)
		if in.observe {
			return fmt.Sprintf("final: %v", out.places)
		}
		return in.op.String()
	},
	DescribeState: func(state any) string { return state.(string) },
}

func checkLinearizable(rep *Report, setup Setup, ops []Op, final State) {
	byItem := map[string][]Op{}
	var end time.Duration
	for _, o := range ops {
		byItem[o.Item] = append(byItem[o.Item], o)
		end = max(end, o.Call, o.Return)
	}
	for it := range setup.Owner {
		if _, ok := byItem[it]; !ok {
			byItem[it] = nil // untouched items must stay where they were
		}
	}
	places := final.Places()
	obs := int64(end) + 1
	items := make([]string, 0, len(byItem))
	for it := range byItem {
		items = append(items, it)
	}
	slices.Sort(items)
	deadline := time.Now().Add(CheckTimeout)
	for _, it := range items {
		owner, known := setup.Owner[it]
		if !known {
			rep.found(NotLinearizable, 1, "item %s was operated on but not created at set-up", it)
			continue
		}
		hist := make([]porcupine.Operation, 0, len(byItem[it])+1)
		for _, o := range byItem[it] {
			ret := int64(o.Return)
			if o.Outcome == Unknown {
				// Abandoned: it may take effect at any time until the
				// final state is read.
				ret = obs
			}
			hist = append(hist, porcupine.Operation{
				ClientId: o.Client, Input: itemInput{op: o}, Call: int64(o.Call),
				Output: itemOutput{outcome: o.Outcome, reason: o.Reason}, Return: ret,
			})
		}
		hist = append(hist, porcupine.Operation{
			Input: itemInput{observe: true}, Call: obs,
			Output: itemOutput{places: places[it]}, Return: obs + 1,
		})
		model := itemModel
		init := placeInv(owner)
		model.Init = func() []any { return []any{init} }
		left := time.Until(deadline)
		if left <= 0 {
			rep.Undecided++
			continue
		}
		switch porcupine.CheckOperationsTimeout(model.ToModel(), hist, left) {
		case porcupine.Illegal:
			rep.found(NotLinearizable, 1, "item %s: no linearization of %s ending in %v", it, describe(byItem[it]), places[it])
		case porcupine.Unknown:
			rep.Undecided++
		}
	}
}

func describe(ops []Op) string {
	parts := make([]string, 0, len(ops))
	for _, o := range ops {
		parts = append(parts, o.String())
	}
	if len(parts) > 6 {
		parts = append(parts[:6], fmt.Sprintf("... (%d more)", len(parts)-6))
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

func checkMoney(rep *Report, setup Setup, ops []Op, final State) {
	inInventory := func(user, item string) bool {
		_, found := slices.BinarySearch(final.Inventory[user], item)
		return found
	}
	// relisted[item][user]: user listed item at some point, so the item's
	// presence in that user's inventory says nothing about a purchase.
	relisted := map[string]map[string]bool{}
	for _, o := range ops {
		if o.Kind == List && setup.Owner[o.Item] != o.Seller {
			if relisted[o.Item] == nil {
				relisted[o.Item] = map[string]bool{}
			}
			relisted[o.Item][o.Seller] = true
		}
	}
	want := map[string]int64{}
	for u, f := range setup.Funds {
		want[u] = f
	}
	skip := map[string]bool{}
	purchases := map[string]int{} // item -> purchases that happened
	listings := map[string]int{}  // item -> listings that may have happened
	// Purchases of one item by one buyer are judged together: once the
	// item is in the buyer's inventory, at least one of them happened, and
	// unknown outcomes are taken to have happened only as far as needed to
	// explain that. A buyer charged twice for one item shows up as a
	// funds mismatch.
	type pair struct{ buyer, item string }
	var order []pair
	groups := map[pair][]Op{}
	for _, o := range ops {
		switch o.Kind {
		case List:
			if o.Outcome != Fail {
				listings[o.Item]++
			}
		case Purchase:
			if o.Outcome == Fail {
				continue
			}
			k := pair{o.Buyer, o.Item}
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			groups[k] = append(groups[k], o)
		}
	}
	for _, k := range order {
		var happened []Op
		var unknown []Op
		for _, o := range groups[k] {
			if o.Outcome == Ok {
				happened = append(happened, o)
			} else {
				unknown = append(unknown, o)
			}
		}
		if relisted[k.item][k.buyer] {
			if len(unknown) > 0 {
				rep.Unresolved += len(unknown)
				for _, o := range groups[k] {
					skip[o.Buyer], skip[o.Seller] = true, true
				}
				continue
			}
		} else if inInventory(k.buyer, k.item) {
			if len(happened) == 0 {
				happened = unknown[:1]
			}
		} else {
			for _, o := range happened {
				rep.found(LostSales, 1, "acknowledged %s, but %s does not hold %s", o, o.Buyer, o.Item)
			}
		}
		for _, o := range happened {
			purchases[o.Item]++
			want[o.Buyer] -= o.Price
			want[o.Seller] += o.Price
		}
	}
	items := make([]string, 0, len(purchases))
	for it := range purchases {
		items = append(items, it)
	}
	slices.Sort(items)
	for _, it := range items {
		if extra := purchases[it] - listings[it]; extra > 0 {
			rep.found(SoldTwice, extra, "item %s bought %d times, listed at most %d times", it, purchases[it], listings[it])
		}
	}
	users := make([]string, 0, len(want))
	for u := range want {
		users = append(users, u)
	}
	slices.Sort(users)
	for _, u := range users {
		if skip[u] {
			continue
		}
		got, ok := final.Funds[u]
		if !ok {
			rep.found(FundsMismatch, 1, "user %s is missing at the end", u)
			continue
		}
		if got != want[u] {
			rep.found(FundsMismatch, 1, "user %s has %d, the purchases that happened leave %d", u, got, want[u])
		}
	}
}
