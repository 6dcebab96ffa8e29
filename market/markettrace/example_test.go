package markettrace_test

import (
	"fmt"

	"github.com/lockmarket/lockmarket/market/markettrace"
)

func ExampleParseClientForm() {
	f, err := markettrace.ParseClientForm("book")
	fmt.Println(f, err)
	_, err = markettrace.ParseClientForm("fast")
	fmt.Println(err)
	// Output:
	// book <nil>
	// market: invalid request: unknown client form "fast" (want lean or book)
}

func ExampleSplitMember() {
	item, seller, ok := markettrace.SplitMember(markettrace.Member("sword", "alice"))
	fmt.Println(item, seller, ok)
	// Output: sword alice true
}
