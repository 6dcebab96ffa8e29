#!/bin/sh
# The lock's hold after a restart that loads for seconds, after and before
# the background release went on through LOADING. Run it from the module
# root of a scratch worktree at the commit to measure: for the "before"
# runs it puts back locking/'s files as they were before that change
# (lost.go, mutex.go, export_test.go; resend_test.go removed), then
# restores them. About 4 minutes: each "before" run waits for the lease.
set -u
BEFORE=50fd860^
run() {
	go test ./locking/ -run TestReleaseThroughLoading -v -count=1 2>&1 |
		grep -E "loading_test.go:9[0-9]|^(ok|FAIL|---)"
}
for i in 1 2 3; do echo "== after run $i at $(git rev-parse --short HEAD): $(uptime)"; run; done
git show $BEFORE:locking/lost.go > locking/lost.go
git show $BEFORE:locking/mutex.go > locking/mutex.go
git show $BEFORE:locking/export_test.go > locking/export_test.go
rm locking/resend_test.go
for i in 1 2 3; do echo "== before run $i ($BEFORE's lost.go, mutex.go): $(uptime)"; run; done
git checkout -q -- locking
