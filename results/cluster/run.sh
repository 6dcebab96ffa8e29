#!/bin/sh
# Reproduces results/cluster: three markets (5x5 each) on local Redis
# Clusters of 1, 2 and 3 masters, one redis-server per master on loopback,
# no replicas. Clusters of 3 are created with redis-cli --cluster create;
# redis-cli refuses fewer masters, so 1 and 2 get their slots with
# CLUSTER ADDSLOTSRANGE and meet with CLUSTER MEET (as
# internal/redis/redisserver.StartCluster does). Run from the repository root;
# takes about 4 minutes. Arguments, if any, are the master counts to run
# (default: 1 2 3).
set -eu
. results/free-port.sh
bin=$(mktemp -d)/simulate
go build -o $bin ./cmd/simulate
# The output directory: $OUT, else results/cluster itself (the committed run).
out=${OUT:-results/cluster}
mkdir -p "$out"
dir=$(mktemp -d)
uptime >> $out/load.txt

# wait_for TRIES CMD...: runs CMD every 0.1 s until it succeeds, at most
# TRIES times; fails (and so ends the script) if it never does.
wait_for() {
	tries=$1; shift
	until "$@" >/dev/null 2>&1; do
		tries=$((tries - 1))
		if [ "$tries" -le 0 ]; then
			echo "cluster/run.sh: gave up waiting for: $*" >&2
			return 1
		fi
		sleep 0.1
	done
}

start_cluster() { # $1 = masters
	n=$1; addrs=""
	# Free ports in a row, and their cluster bus ports, chosen just before
	# the servers start.
	base=$(free_port "$n")
	for i in $(seq 0 $((n - 1))); do
		p=$((base + i))
		mkdir -p $dir/$p
		(cd $dir/$p && redis-server --port $p --bind 127.0.0.1 --save "" --appendonly no \
			--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
			>/dev/null 2>&1 &)
		addrs="$addrs 127.0.0.1:$p"
	done
	for i in $(seq 0 $((n - 1))); do
		wait_for 300 redis-cli -p $((base + i)) ping
	done
	if [ "$n" -ge 3 ]; then
		redis-cli --cluster create $addrs --cluster-replicas 0 --cluster-yes >/dev/null
	else
		for i in $(seq 0 $((n - 1))); do
			redis-cli -p $((base + i)) cluster addslotsrange $((i * 16384 / n)) $(((i + 1) * 16384 / n - 1)) >/dev/null
			[ "$i" -gt 0 ] && redis-cli -p $((base + i)) cluster meet 127.0.0.1 $base >/dev/null
		done
	fi
	for i in $(seq 0 $((n - 1))); do
		wait_for 600 sh -c "redis-cli -p $((base + i)) cluster info | grep -q cluster_state:ok"
	done
	CLUSTER=$(echo $addrs | tr ' ' ',')
	# One address alone would mean one plain server to simulate's -redis;
	# naming it twice makes it a cluster client's seed list.
	[ "$n" -eq 1 ] && CLUSTER="$CLUSTER,$CLUSTER"
	return 0
}

stop_cluster() { # $1 = masters
	for i in $(seq 0 $(($1 - 1))); do redis-cli -p $((base + i)) shutdown nosave >/dev/null 2>&1 || true; done
	sleep 0.5
	rm -rf $dir/*
}

# A run that stops early (a failure, Ctrl-C) shuts its servers down too.
trap 'if [ -n "${base:-}" ]; then stop_cluster "${n:-3}"; fi' EXIT

for n in ${*:-1 2 3}; do
	strategies=fine,lua
	[ "$n" -eq 3 ] && strategies=watch,coarse,fine,lua
	start_cluster $n
	mkdir -p $out/masters-$n
	redis-cli -p $base cluster nodes > $out/masters-$n/nodes.txt
	$bin run -redis "$CLUSTER" -scenarios 5x5 -strategies $strategies -markets 3 -duration 10s \
		-out $out/masters-$n >$out/masters-$n/table.txt 2>$out/masters-$n/stderr.log || true
	stop_cluster $n
done
uptime >> $out/load.txt
rmdir $dir
