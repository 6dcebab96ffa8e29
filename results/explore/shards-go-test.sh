#!/bin/sh
# go test in examples/bring-your-own with the variables a test runner
# that shards tests sets (Bazel's): each of the 2 shards of the module's
# tests, with a fresh status file, which the test must touch. Prints the
# command, whether the status file exists afterwards, and the lines of
# go test -v that name a test, a shard or a result.
# Usage (from the repository's root):
#   results/explore/shards-go-test.sh >results/explore/shards-go-test.txt
set -u
cd examples/bring-your-own || exit 1
echo "# $(uname -sr), $(nproc) cores, $(go version), commit $(git rev-parse --short=12 HEAD)"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for i in 0 1; do
	echo "load $(uptime | sed 's/.*load average: //')"
	echo "TEST_TOTAL_SHARDS=2 TEST_SHARD_INDEX=$i TEST_SHARD_STATUS_FILE=\$dir/status-$i go test -count=1 -v ./..."
	TEST_TOTAL_SHARDS=2 TEST_SHARD_INDEX=$i TEST_SHARD_STATUS_FILE="$dir/status-$i" \
		go test -count=1 -v ./... 2>&1 | grep -E '^(=== RUN|--- |ok|FAIL|PASS)|shard|found after' |
		sed 's/^ *//'
	if [ -e "$dir/status-$i" ]; then echo "status file: touched"; else echo "status file: absent"; fi
done
