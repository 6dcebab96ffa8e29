// Package goroutine tells the explorer's runtime which goroutine runs
// and what the goroutines are doing: the calling goroutine's id (ID,
// read from the runtime's record of it where the platform allows, else
// from its stack trace), the goroutine that created it (OwnCreator), and
// each goroutine's state and frames in a stack dump (Dump, State).
//
// The runtime (package sched) follows a client's goroutines by their ids
// and creators, and tells from stack dumps whether they are at rest.
//
// Of this module, it imports nothing.
package goroutine
