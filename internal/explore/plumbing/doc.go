// Package plumbing is the explorer's Redis plumbing: the go-redis hook
// that holds each command and pipeline until a Gate lets it go, the Lua
// scripts that empty an explored namespace and shorten its leases as the
// virtual clock advances (and drop a node's keys), the key names of the
// nodes of a multi-node target, the reading of a command's keys and reply,
// and the dilation of virtual time into the server's time.
//
// Of this module, it imports only the reading of a command
// (internal/redis/rediscmd) and the names of the lock's scripts
// (locking/locktrace): it knows nothing of clients, schedules or targets.
// Its tests also import internal/testsupport/redistest.
package plumbing
