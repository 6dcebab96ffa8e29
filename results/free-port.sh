# Sourced by the scripts under results/ (". results/free-port.sh"):
# free_port N prints a TCP port P such that P..P+N-1 and, for a Redis
# Cluster's bus, P+10000..P+10000+N-1 are all free on loopback, starting
# from a random port in 20000..39999 so that two runs at once do not pick
# the same. Needs ss (iproute2).
free_port() {
	n=${1:-1}
	p=$((20000 + $(od -An -N2 -tu2 /dev/urandom) % 20000))
	while :; do
		busy=
		i=0
		while [ "$i" -lt "$n" ]; do
			for q in $((p + i)) $((p + i + 10000)); do
				ss -Hltn "sport = :$q" | grep -q . && busy=1
			done
			i=$((i + 1))
		done
		[ -z "$busy" ] && break
		p=$((p + n))
	done
	echo $p
}
