#!/bin/sh
# Deletes reports older than a day from ./reports, the directory report.sh
# writes (under systemd, /var/lib/scheduler/reports). Nothing to do before
# the first report.
set -eu
[ -d reports ] || { echo "no reports yet"; exit 0; }
find reports -name '*.txt' -type f -mmin +1440 -print -delete
