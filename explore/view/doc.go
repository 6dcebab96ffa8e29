// Package view tells a person what the explorer did: the narration of a
// schedule, step by step, with what each client believes, the lock's
// holders and the causal chain of a violation (StepNote, ClientView,
// Chain), and the report of a search (WriteSummary, WriteFindings).
//
// It may import packages sched and plumbing, the report helpers of
// internal/report and the command helpers of internal/redis/rediscmd;
// nothing above it (targets, step, explore).
package view
