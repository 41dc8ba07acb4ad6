#!/bin/sh
# install.sh: lays out a prober home (default /srv/prober) from a built tree:
# bin/ with plan, run, publish and minute.sh, and the var/ directories the
# minute writes. The lists (servers.csv, paused.txt) are the operator's.
# Run from the repository root after `make build`, or use `make install`.
#
#   deploy/install.sh [HOME]
set -eu
home=${1:-/srv/prober}
mkdir -p "$home/bin" "$home/var/data" "$home/var/site" "$home/var/log"
for c in plan run publish; do
	install -m 0755 "bin/$c" "$home/bin/$c"
done
install -m 0755 deploy/minute.sh "$home/bin/minute.sh"
echo "installed into $home; add servers.csv and paused.txt, then deploy/crontab or deploy/prober.{service,timer}"
