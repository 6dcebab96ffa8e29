// Package result is what an exploration checks and what it found: the
// properties (MutualExclusion, Liveness, Lease...) and a Violation of
// one; a search's Result, with a Counterexample of each property broken,
// what each op of a recipe did (OpCount, Vacuous), and its JSON; and the
// records of a search cut into shards, merged into one (MergeShards).
//
// It runs nothing: package sched runs the schedules and fills a Result.
//
// Of this module, it imports only internal/explore/{action, search,
// plumbing} and the timeline of a replay (internal/timeline). Its tests
// also import internal/testsupport/jsonkeys.
package result
