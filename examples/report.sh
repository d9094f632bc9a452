#!/bin/sh
# Writes a small report for one customer under ./reports, relative to the
# working directory: under systemd, /var/lib/scheduler/reports, inside the
# unit's state directory (the rest of the file system is read-only to it).
# Usage: report.sh --customer NAME --format pdf|txt
# Exit 65 (EX_DATAERR) for a format it does not know: the scheduler treats it
# as permanent and does not retry.
set -eu
customer="" format="txt"
while [ $# -gt 0 ]; do
	case "$1" in
	--customer) customer="$2"; shift 2 ;;
	--format) format="$2"; shift 2 ;;
	*) echo "unknown argument: $1" >&2; exit 64 ;;
	esac
done
case "$format" in
pdf|txt) ;;
*) echo "unknown format: $format" >&2; exit 65 ;;
esac
[ -n "$customer" ] || { echo "no --customer" >&2; exit 64; }
mkdir -p reports
out="reports/${customer}-$(date -u +%Y%m%dT%H%M%SZ).${format}.txt"
{
	echo "report for $customer"
	echo "job ${SCHEDULER_JOB_ID:-?} attempt ${SCHEDULER_ATTEMPT:-?}"
	echo "scheduled at ${SCHEDULER_SCHEDULED_AT:-manual}"
	echo "written at $(date +%Y-%m-%dT%H:%M:%S%z) (TZ ${TZ:-unset})"
	echo "payload: $(cat)"
} >"$out.tmp"
mv "$out.tmp" "$out"
echo "wrote $out"
