// Package step steps through one schedule by hand, for the lab page and
// the explorer's commands: Cut runs a schedule up to a point and says
// where it stands (the enabled actions, the holders, each client's view),
// and FindFrom searches the schedules that continue it.
//
// It is internal: the service imports it, and the service, under
// internal/, imports nothing of the public explore/.
//
// Of this module, it imports only internal/explore/{action, result,
// sched, view, search}: nothing above it (explore). Its tests also import
// internal/explore/{targets, plumbing}, the market and
// internal/testsupport/redistest.
package step
