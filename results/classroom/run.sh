#!/bin/sh
# The class of 40, in two runs, each recording the commit, the machine and
# its load before and after (see README.md):
#   find-40.txt   40 sessions from one address ask "find a bug" together
#                 (findclass, against a market binary), the room's reads
#                 measured meanwhile;
#   class-40.txt  40 students in one headless Chromium (TestBrowserClass
#                 with LOCKMARKET_CLASS=40).
# ONLY=find or ONLY=browser runs one of them.
set -eu
cd "$(dirname "$0")/../.."
dir=results/classroom
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
header() {
	echo "# commit $(git rev-parse --short HEAD), $(nproc) cores, $(redis-server --version | cut -d' ' -f1-3)"
}
if [ "${ONLY:-find}" = find ]; then
	go build -o "$tmp/market" ./cmd/market
	go build -o "$tmp/findclass" ./results/classroom/findclass
	{
		echo "# results/classroom/run.sh: 40 sessions from one address ask \"find a bug\" together"
		header
		echo "# command: $tmp/findclass -market $tmp/market -n 40"
		echo "# uptime before: $(uptime)"
		status=0
		timeout 900 "$tmp/findclass" -market "$tmp/market" -n 40 || status=$?
		echo "# uptime after: $(uptime)"
		exit $status
	} 2>&1 | tee "$dir/find-40.txt"
fi
if [ "${ONLY:-browser}" = browser ]; then
	{
		echo "# results/classroom/run.sh: the class of 40 in one headless Chromium"
		header
		echo "# $(chromium --version 2>/dev/null || echo chromium)"
		echo "# command: CI=true LOCKMARKET_CLASS=40 go test -count=1 -timeout 30m" \
			"-run 'TestBrowserClass\$' -v ./internal/service/httpapi/"
		echo "# uptime before: $(uptime)"
		status=0
		CI=true LOCKMARKET_CLASS=40 go test -count=1 -timeout 30m -run 'TestBrowserClass$' -v \
			./internal/service/httpapi/ || status=$?
		echo "# uptime after: $(uptime)"
		exit $status
	} 2>&1 | tee "$dir/class-40.txt"
fi
