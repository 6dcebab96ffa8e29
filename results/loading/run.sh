#!/bin/sh
# The lock's hold after a restart that loads for seconds, after and before
# the background release went on through LOADING (commit 50fd860). Run it
# from the repository root; about 4 minutes: each "before" run waits for
# the lease. Writes $OUT/run.txt ($OUT: results/loading by default).
#
# "after": TestReleaseThroughLoading in this tree, three runs. "before":
# the same three runs in a temporary worktree of d86a980 (the test as
# measured, in the tree it was written for, built whole) with locking/'s
# lost.go, mutex.go and export_test.go as they were before the change
# (50fd860^) and resend_test.go removed. The worktree is removed at the
# end.
set -u
out=${OUT:-results/loading}
mkdir -p "$out"
BEFORE=50fd860^
TREE=d86a980
old=$(mktemp -d)
trap 'git worktree remove --force "$old" >/dev/null 2>&1; rm -rf "$old"' EXIT INT TERM
git worktree add -q --detach "$old" $TREE || exit 1
for f in lost.go mutex.go export_test.go; do
	git show $BEFORE:locking/$f >"$old/locking/$f" || exit 1
done
rm "$old/locking/resend_test.go"
run() {
	go test ./locking/ -run TestReleaseThroughLoading -v -count=1 2>&1 |
		grep -E "loading_test.go:9[0-9]|^(ok|FAIL|---)"
}
{
	for i in 1 2 3; do echo "== after run $i at $(git rev-parse --short HEAD): $(uptime)"; run; done
	for i in 1 2 3; do
		echo "== before run $i ($TREE with $BEFORE's lost.go, mutex.go): $(uptime)"
		(cd "$old" && run)
	done
} >"$out/run.txt"
