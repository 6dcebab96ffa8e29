// Package search is the explorer's search layer: it chooses, run after
// run, which of the enabled choices a system under test takes next, and
// knows nothing of what the choices do.
//
// A System runs one schedule from its initial state, asking a Chooser at
// each decision which of the enabled choices to take; it tells the
// search each choice's identity (a comparable key, the same in every run
// of the same schedule), which choices commute (Independent), which are
// faults, and which thread owns each; at a decision it may fingerprint
// its state. The search drives it:
//
//   - Search.Exhaustive goes through every schedule, depth first, each
//     run replaying the path to its decision. Sleep sets (Godefroid's
//     reduction) take two commuting choices in one order only; the state
//     cache, shared by the workers, cuts a run at a state an earlier run
//     reached with a sleep set no larger (a system may name a state up
//     to a symmetry: Decision.Rename). With several systems (workers),
//     the decisions down to a fixed depth are taken by the first, and
//     each subtree found there is handed to a free worker with the sleep
//     set one worker would give it, so that without the cache the same
//     schedules run.
//   - With Options.Shard, Search.Exhaustive searches one of several
//     disjoint parts of the tree (Shard). A shard on one system records
//     what it explored (Result.Explored), and Recount counts, over the
//     records of every shard, the runs the whole search would count.
//   - Search.Walk runs random schedules, faults apart from the other
//     choices; Search.PCT runs probabilistic concurrency testing.
//   - Replay runs a fixed plan, and Shrink shortens a counterexample.
//
// The search counts the schedules run, keeps the shortest counterexample
// of each property, and measures the coverage of the search tree: the
// weight of the subtrees it has covered, where each decision splits its
// weight equally among its enabled choices, and a choice pruned by a sleep
// set or the state cache counts as covered. An exhaustive search covers 1
// exactly. A search whose context ends returns what it has so far.
//
// The design follows the model checkers loom and shuttle: the scheduler
// (this package) is apart from the runtime that parks the threads and the
// system that gives them meaning.
//
// Of this module, it imports nothing: it knows no Redis.
package search
