// Package action is the vocabulary of the explorer's schedules: the
// choices a scheduler makes (Action: run a command, advance the clock,
// start a critical section, strike a fault), the steps they make
// (Step), the faults a model may allow (Fault: what each is, its name
// and its action), and the bounds of an exploration (Model), with how
// the command line and JSON write them.
//
// It runs nothing: package sched strikes the faults and runs the
// actions.
//
// Of this module, it imports nothing.
package action
