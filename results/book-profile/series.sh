# Shared by run.sh, jitter/run.sh and seeds/run.sh (sourced, from the
# repository root): each runs a series of `simulate run` calls, one file
# of JSON and one log per call, notes the machine's load before and after
# each, and appends each run's shape targets (targets.jq) to targets.txt.

# series_start DIR: checks for jq, builds the simulator (stamped with the
# commit) into a temporary directory removed at exit, and sets $out to
# $OUT, else DIR (the committed run), with its load.txt and targets.txt
# emptied.
series_start() {
	command -v jq >/dev/null || { echo "$0: needs jq (Debian: apt-get install jq)" >&2; exit 2; }
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	bin=$tmp/simulate
	go build -ldflags "-X github.com/lockmarket/lockmarket/internal/report/output.Commit=$(git rev-parse --short=12 HEAD)" \
		-o "$bin" ./cmd/simulate
	out=${OUT:-$1}
	mkdir -p "$out"
	: > "$out/load.txt"
	: > "$out/targets.txt"
}

# series_run NAME LABEL ARGS...: runs `simulate run ARGS -format json`
# into $out/NAME.json and $out/NAME.log, the load noted under LABEL.
series_run() {
	name=$1 label=$2
	shift 2
	echo "before $label: $(uptime)" >> "$out/load.txt"
	"$bin" run "$@" -format json > "$out/$name.json" 2> "$out/$name.log"
	echo "after $label: $(uptime)" >> "$out/load.txt"
	jq -c -f results/book-profile/targets.jq "$out/$name.json" >> "$out/targets.txt"
}
