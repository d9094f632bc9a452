#!/bin/sh
# Prints that the scheduler is alive: a quick job whose output shows up in
# `scheduler -job`. It reads nothing from /proc, which the shipped unit
# hides (ProcSubset=pid).
echo "alive at $(date +%Y-%m-%dT%H:%M:%S%z) (TZ ${TZ:-unset}), job ${SCHEDULER_JOB_ID:-?} attempt ${SCHEDULER_ATTEMPT:-?}"
