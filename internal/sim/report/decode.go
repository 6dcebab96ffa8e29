package report

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

// legacyAvgWait is the key the book's mean wait had before its unit went
// into the key.
const legacyAvgWait = "avg_wait"

// Decode reads a document written by JSON. It also reads the documents of
// earlier versions, whose keys differed (the results/ directory keeps
// some): a row's failures.listing_gone is now listing_not_found, and the
// book's avg_wait is now avg_wait_ms, also in upper_bounds and in
// published, where "14ms" is now "14". A saved verdict is dropped: the
// reading is computed afresh from the rows, by the rule of this version.
func Decode(data []byte) (Document, error) {
	var doc Document
	if err := json.Unmarshal(data, &doc); err != nil {
		return Document{}, err
	}
	doc.Verdict = nil
	var old struct {
		Rows []struct {
			Failures struct {
				ListingGone *int64 `json:"listing_gone"`
			} `json:"failures"`
			Book *struct {
				AvgWait *float64 `json:"avg_wait"`
			} `json:"book"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(data, &old); err != nil {
		return Document{}, err
	}
	for i, o := range old.Rows {
		r := &doc.Rows[i]
		if o.Failures.ListingGone != nil {
			r.Failures.ListingNotFound = *o.Failures.ListingGone
		}
		if o.Book == nil || o.Book.AvgWait == nil || r.Book == nil {
			continue
		}
		r.Book.AvgWaitMs = *o.Book.AvgWait
		if v, ok := r.Book.Published[legacyAvgWait]; ok {
			delete(r.Book.Published, legacyAvgWait)
			r.Book.Published["avg_wait_ms"] = strings.TrimSuffix(v, "ms")
		}
		for j, f := range r.Book.UpperBounds {
			if f == legacyAvgWait {
				r.Book.UpperBounds[j] = "avg_wait_ms"
			}
		}
	}
	return doc, nil
}

// ReadFile reads the document saved in path (Decode); a document without
// rows is an error.
func ReadFile(path string) (Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Document{}, err
	}
	doc, err := Decode(data)
	if err != nil {
		return Document{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(doc.Rows) == 0 {
		return Document{}, fmt.Errorf("%s: no rows", path)
	}
	return doc, nil
}

// ReadSweepFile reads the sweep saved in path; a sweep without points is
// an error.
func ReadSweepFile(path string) (Sweep, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Sweep{}, err
	}
	var sw Sweep
	if err := json.Unmarshal(data, &sw); err != nil {
		return Sweep{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(sw.Points) == 0 {
		return Sweep{}, fmt.Errorf("%s: no points", path)
	}
	return sw, nil
}
