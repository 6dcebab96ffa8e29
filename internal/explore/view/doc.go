// Package view tells a person what the explorer did: the narration of a
// schedule, step by step, with what each client believes, the lock's
// holders and the causal chain of a violation (StepNote, ClientView,
// Chain), and the report of a search (WriteSummary, WriteFindings).
//
// Of this module, it imports only internal/explore/{action, result, sched,
// plumbing}, the outputs' conventions (internal/report/output) and the
// reading of a command (internal/redis/rediscmd): nothing above it (targets, step,
// explore).
package view
