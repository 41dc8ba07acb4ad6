#!/bin/sh
# minute.sh: plan, run and publish one minute of the prober; cron and the
# systemd timer (deploy/) both run this script, once a minute.
#
#   minute.sh            the next whole minute (UTC)
#   minute.sh 2026-12-02T10:33   that minute
#
# Its home is the directory above the script's own (make install puts it in
# HOME/bin/), or PROBER_HOME: bin/ (plan, run, publish), servers.csv,
# paused.txt, etc/prober.conf, and var/ (data/, site/, log/), made here if
# missing. It needs no environment: cron gives it none.
#
# Settings, from the environment or from the config file (PROBER_CONFIG,
# default HOME/etc/prober.conf, a shell file of NAME="value" lines; what it
# sets wins over the environment; a value may span lines):
#   PROBER_PAUSED      paused.txt: the paused list, a file or
#                      github:OWNER/REPO/PATH[@REF] (publish then reads the
#                      copy plan keeps in var/data/paused/)
#   PROBER_PLAN_FLAGS  plan's flags, e.g. -first-check-soon for the first day
#   PROBER_RUN_FLAGS   -source 87.236.197.37: run's flags (rule N11); a test
#                      deployment's -lab -ca-file FILE -resolve ... go here
#   PROBER_METRICS     a directory for node_exporter's textfile collector
#                      (run.prom, publish.prom, minute.prom); empty: none
#   PROBER_CONTACT     the operator's e-mail address, which the checks page
#                      and probe.json give (publish -contact); required:
#                      without it publish is not run and the last site stands
#
# A failed plan stops the minute: nothing is run and nothing published (the
# last published site stands). A failed run is still followed by publish:
# what its checks recorded is published. The exit status is that of the
# first step that failed, 0 when none did. Each step appends to
# var/log/STEP.log; a log over 10 MiB is moved to STEP.log.1 (replacing
# the one before) when a minute begins, so var/log holds at most two of
# each. A failure is one line, naming the file or setting and what to do
# (for a failed step, its error: the last line starting "STEP: " that it
# logged), sent to syslog (logger -t prober-minute, the journal under
# systemd; on stderr where there is no logger), to var/log/minute.log, and
# to minute.prom: prober_minute_success{step} and
# prober_minute_error{step,error}.
set -u
self=$(cd "$(dirname "$0")" 2>/dev/null && pwd)
home=${PROBER_HOME:-${self%/bin}}
config=${PROBER_CONFIG:-$home/etc/prober.conf}
case $config in /*) ;; *) config=$PWD/$config ;; esac
minute=${1:-$(date -u -d '+1 min' +%Y-%m-%dT%H:%M)}
steps=
errors=
in_home=0
log_max=10485760

# report LEVEL TEXT sends a line to syslog (stderr without logger) and,
# when the home is reachable, to var/log/minute.log.
report() {
	if command -v logger >/dev/null 2>&1; then
		logger -t prober-minute -p "user.$1" -- "minute $minute: $2"
	else
		echo "prober-minute: minute $minute: $2" >&2
	fi
	[ "$in_home" = 1 ] && echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) minute.sh $minute: $2" >>var/log/minute.log
	return 0
}

# step NAME OK records how step NAME went (1 or 0) for minute.prom.
step() { steps="$steps $1=$2"; }

# step_error NAME TEXT records why step NAME failed for minute.prom, as a
# label value (backslashes and quotes escaped, at most 1,000 bytes).
step_error() {
	e=$(printf '%s' "$2" | cut -c 1-1000 | sed 's/\\/\\\\/g; s/"/\\"/g')
	errors="${errors}prober_minute_error{step=\"$1\",error=\"$e\"} 1
"
}

# write_metrics writes minute.prom (replaced atomically) when PROBER_METRICS
# is set: each step this minute tried, 1 or 0, and when the minute ended.
write_metrics() {
	[ -n "${metrics:-}" ] || return 0
	mkdir -p "$metrics" 2>/dev/null || return 0
	tmp="$metrics/.minute.prom.$$"
	{
		echo "# HELP prober_minute_success 1 when the step of the last minute.sh went through, 0 when it failed (setup: the home, var/ and the config); a step not tried is left out."
		echo "# TYPE prober_minute_success gauge"
		for s in $steps; do
			echo "prober_minute_success{step=\"${s%=*}\"} ${s#*=}"
		done
		echo "# HELP prober_minute_error 1 for each step of the last minute.sh that failed, with the line minute.log got: the file or setting, and what to do."
		echo "# TYPE prober_minute_error gauge"
		printf '%s' "$errors"
		echo "# HELP prober_minute_last_timestamp_seconds When the last minute.sh ended, Unix time."
		echo "# TYPE prober_minute_last_timestamp_seconds gauge"
		echo "prober_minute_last_timestamp_seconds $(date -u +%s)"
	} >"$tmp" && mv -f "$tmp" "$metrics/minute.prom" || rm -f "$tmp"
}

# setup_failed TEXT ends a minute that could not begin.
setup_failed() {
	report err "$1: nothing planned, run or published"
	step setup 0
	step_error setup "$1: nothing planned, run or published"
	write_metrics
	exit 1
}

# config_value NAME prints the value a config file that does not parse
# gives NAME on a line of its own (NAME="value"), for the metrics of that
# failure.
config_value() {
	sed -n "s/^$1=[\"']\{0,1\}\([^\"']*\)[\"']\{0,1\}[[:space:]]*\$/\1/p" "$config" 2>/dev/null | tail -n 1
}

config_error=
if [ -f "$config" ]; then
	# A syntax error in a sourced file would end the script unreported:
	# it is reported once the home is entered, so minute.log has it too.
	if why=$(sh -n "$config" 2>&1); then
		# shellcheck disable=SC1090 # the operator's file
		. "$config"
	else
		why=$(printf '%s\n' "$why" | head -n 1)
		why=${why#"$config": }
		case $why in [0-9]*) why="line $why" ;; esac # dash says "FILE: 4: ...", bash "FILE: line 4: ..."
		config_error="config $config does not parse: $why; fix it (sh -n $config says where)"
		PROBER_METRICS=${PROBER_METRICS:-$(config_value PROBER_METRICS)}
	fi
fi
paused=${PROBER_PAUSED:-paused.txt}
plan_flags=${PROBER_PLAN_FLAGS:-}
run_flags=${PROBER_RUN_FLAGS:--source 87.236.197.37}
metrics=${PROBER_METRICS:-}
contact=${PROBER_CONTACT:-}
cd "$home" 2>/dev/null || setup_failed "cannot enter the prober home $home (PROBER_HOME, or the directory above bin/minute.sh)"
mkdir -p var/data var/site var/log 2>/dev/null || setup_failed "cannot make var/data, var/site and var/log in $home"
in_home=1
[ -z "$config_error" ] || setup_failed "$config_error"
[ -z "$metrics" ] || mkdir -p "$metrics" 2>/dev/null || setup_failed "cannot make the metrics directory $metrics (PROBER_METRICS)"
# Each log stays under log_max, and one older beside it (one minute.sh at
# a time moves them: minutes overlap).
(
	flock -n 9 || exit 0
	for f in var/log/*.log; do
		[ -f "$f" ] && [ "$(wc -c <"$f")" -gt "$log_max" ] && mv -f "$f" "$f.1"
	done
) 9>var/log/.rotate.lock
step setup 1
# The lists are named from the home, so that what names them (a step's
# error) says where they are.
servers=$home/servers.csv
case $paused in
github:*) published_paused=var/data/paused/last-good.txt ;;
/*) published_paused=$paused ;;
*)
	paused=$home/$paused
	published_paused=$paused
	;;
esac

# with_metrics NAME COMMAND... runs COMMAND, adding -metrics
# PROBER_METRICS/NAME.prom when PROBER_METRICS is set.
with_metrics() {
	n=$1
	shift
	if [ -n "$metrics" ]; then "$@" -metrics "$metrics/$n.prom"; else "$@"; fi
}

# failed STEP TEXT reports a failed step with its error: the last line
# starting "STEP: " of its log's last lines (every command prints its error
# so, last; runs of other minutes may write between), else its last line.
failed() {
	why=$(tail -n 200 "var/log/$1.log" 2>/dev/null | grep "^$1: " | tail -n 1)
	[ -n "$why" ] || why=$(tail -n 1 "var/log/$1.log" 2>/dev/null)
	failed_with "$1" "$2; var/log/$1.log says: $why"
	echo "$(date -u +%Y-%m-%dT%H:%M:%SZ) minute.sh $minute: $2" >>"var/log/$1.log"
}

# failed_with STEP LINE reports a failed step with the line given.
failed_with() {
	step "$1" 0
	step_error "$1" "$2"
	report err "$2"
}

# shellcheck disable=SC2086 # the flags variables are lists of flags
if ! flock -w 50 var/data/plan.lock bin/plan -servers "$servers" -paused "$paused" -data var/data -at "$minute" $plan_flags >>var/log/plan.log 2>&1; then
	failed plan "plan failed: nothing run or published"
	write_metrics
	exit 1
fi
step plan 1
status=0
# shellcheck disable=SC2086
if with_metrics run bin/run -data var/data -at "$minute" $run_flags >>var/log/run.log 2>&1; then
	step run 1
else
	status=1
	failed run "run failed: what its checks recorded is published"
fi
if [ -z "$contact" ]; then
	status=1
	failed_with publish "publish not run: PROBER_CONTACT is empty: set the operator's e-mail address in $config (PROBER_CONTACT=\"you@example.org\"); the last published site stands"
elif with_metrics publish flock -w 55 var/data/publish.lock bin/publish -data var/data -servers "$servers" -paused "$published_paused" -out var/site -contact "$contact" >>var/log/publish.log 2>&1; then
	step publish 1
else
	status=1
	failed publish "publish failed: the last published site stands"
fi
write_metrics
exit $status
