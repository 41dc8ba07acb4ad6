#!/bin/sh
# install.sh: lays out a prober home (default /srv/prober) from a built tree:
# bin/ with plan, run, publish and minute.sh (which finds its home from its
# own place), etc/ with the crontab line, the systemd units and the alert
# rules written for this home, an example etc/prober.conf (kept if there is
# one), and the var/ directories the minute writes. The lists (servers.csv,
# paused.txt) are the operator's.
# Run from the repository root after `make build`, or use `make install`.
#
#   deploy/install.sh [HOME [BIN]]    BIN: the built commands, default bin
set -eu
home=${1:-/srv/prober}
bin=${2:-bin}
here=$(dirname "$0")
mkdir -p "$home/bin" "$home/etc" "$home/var/data" "$home/var/site" "$home/var/log"
home=$(cd "$home" && pwd)
for c in plan run publish; do
	install -m 0755 "$bin/$c" "$home/bin/$c"
done
install -m 0755 "$here/minute.sh" "$home/bin/minute.sh"
for f in crontab prober.service prober.timer; do
	sed "s|/srv/prober|$home|g" "$here/$f" >"$home/etc/$f"
done
install -m 0644 "$here/alerts.yml" "$home/etc/alerts.yml"
[ -e "$home/etc/prober.conf" ] || install -m 0644 "$here/prober.conf" "$home/etc/prober.conf"
echo "installed into $home; add servers.csv and paused.txt, set $home/etc/prober.conf, then"
echo "  cp $home/etc/crontab /etc/cron.d/prober"
echo "or cp $home/etc/prober.service $home/etc/prober.timer /etc/systemd/system/"
