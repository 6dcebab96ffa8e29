#!/bin/sh
# usage: coldbuild.sh DIR PKG
cd $1
c=$(mktemp -d)
start=$(date +%s.%N)
/usr/bin/time -f "%e s wall, %U s user, %S s sys, %M KB maxrss" env GOCACHE=$c GOFLAGS=-mod=mod go build -o /dev/null $2 2>&1 | tail -1
rm -rf $c
