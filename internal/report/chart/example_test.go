package chart_test

import (
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/lockmarket/lockmarket/internal/report/chart"
)

// The text a reader sees on a small bar chart: the title, the legend, the
// value axis in steps of 0.1 from zero, the groups and the axis titles.
// The zero is drawn as no bar.
func ExampleBars() {
	c := chart.Bars{
		Title:  "WATCH retries per item bought",
		XLabel: "scenario",
		YLabel: "retries / purchase",
		Groups: []string{"1x1", "5x5"},
		Series: []chart.Series{
			{Name: "watch", Values: []float64{0.3, 0.45}},
			{Name: "coarse", Values: []float64{0, 0.05}},
		},
	}
	var b strings.Builder
	if err := c.SVG(&b); err != nil {
		fmt.Println(err)
		return
	}
	var texts []string
	inText := false
	dec := xml.NewDecoder(strings.NewReader(b.String()))
	for {
		tok, err := dec.Token()
		if err != nil {
			break
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			inText = tok.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		case xml.EndElement:
			inText = false
		}
	}
	fmt.Println(strings.Join(texts, " | "))
	fmt.Println(strings.Count(b.String(), `class="bar"`), "bars")
	// Output:
	// WATCH retries per item bought | watch | coarse | 0 | 0.1 | 0.2 | 0.3 | 0.4 | 0.5 | retries / purchase | 1x1 | 5x5 | scenario
	// 3 bars
}
