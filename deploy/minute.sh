#!/bin/sh
# minute.sh: plan, run and publish one minute of the prober; cron and the
# systemd timer (deploy/) both run this script, once a minute.
#
#   minute.sh            the next whole minute (UTC)
#   minute.sh 2026-12-02T10:33   that minute
#
# Environment (the defaults are the layout `make install` makes):
#   PROBER_HOME       /srv/prober: bin/ (plan, run, publish), servers.csv,
#                     paused.txt, and var/ (data/, site/, log/), made here
#                     if missing
#   PROBER_PAUSED     paused.txt: the paused list, a file or
#                     github:OWNER/REPO/PATH[@REF] (publish then reads the
#                     copy plan keeps in var/data/paused/)
#   PROBER_RUN_FLAGS  -source 87.236.197.37: run's flags (rule N11)
#   PROBER_METRICS    a directory for node_exporter's textfile collector
#                     (run.prom, publish.prom); empty: no metrics
#
# A failed plan stops the minute: nothing is run and nothing published (the
# last published site stands). A failed run is still followed by publish:
# what its checks recorded is published. The exit status is that of the
# first step that failed, 0 when none did. Each step appends to
# var/log/STEP.log.
set -u
home=${PROBER_HOME:-/srv/prober}
paused=${PROBER_PAUSED:-paused.txt}
run_flags=${PROBER_RUN_FLAGS:--source 87.236.197.37}
metrics=${PROBER_METRICS:-}
cd "$home" || exit 1
minute=${1:-$(date -u -d '+1 min' +%Y-%m-%dT%H:%M)}
mkdir -p var/data var/site var/log || exit 1
if [ -n "$metrics" ]; then
	mkdir -p "$metrics" || exit 1
	run_metrics="-metrics $metrics/run.prom"
	publish_metrics="-metrics $metrics/publish.prom"
else
	run_metrics=
	publish_metrics=
fi
case $paused in
github:*) published_paused=var/data/paused/last-good.txt ;;
*) published_paused=$paused ;;
esac

# log STEP TEXT appends a line of the script's own to var/log/STEP.log.
log() { echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) minute.sh $minute: $2" >>"var/log/$1.log"; }

if ! flock -w 50 var/data/plan.lock bin/plan -servers servers.csv -paused "$paused" -data var/data -at "$minute" >>var/log/plan.log 2>&1; then
	log plan "plan failed: nothing run or published"
	exit 1
fi
status=0
# shellcheck disable=SC2086 # run_flags and run_metrics are lists of flags
bin/run -data var/data -at "$minute" $run_flags $run_metrics >>var/log/run.log 2>&1 || status=1
# shellcheck disable=SC2086
flock -w 55 var/data/publish.lock bin/publish -data var/data -servers servers.csv -paused "$published_paused" -out var/site $publish_metrics >>var/log/publish.log 2>&1 || status=1
exit $status
