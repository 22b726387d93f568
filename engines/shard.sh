#!/usr/bin/env bash
# One shard of a sharded `shardfuzz fuzz` run, on whatever engine runs the shards:
#   a Kubernetes indexed Job: Kubernetes sets JOB_COMPLETION_INDEX (0..N-1): that is K;
#   a CI matrix, pytest-xdist (engines/test_shards.py), or by hand: SHARD_INDEX=K.
# SHARD_COUNT=N is required. The shard writes its report to $REPORT_ROOT/shard-K
# (REPORT_ROOT defaults to reports/shards); `shardfuzz merge $REPORT_ROOT/shard-*` joins them.
# Further arguments go to `shardfuzz fuzz` (e.g. --profile nightly --seed 0 --database redis://...).
# Exit code: shardfuzz's (0 clean, 1 a new divergence, 2 bad input, 3 a shardfuzz bug).
set -euo pipefail
k="${JOB_COMPLETION_INDEX:-${SHARD_INDEX:-}}"
n="${SHARD_COUNT:-}"
if [ -z "$k" ] || [ -z "$n" ]; then
  echo "error: engines/shard.sh: set SHARD_COUNT=N and SHARD_INDEX=K (0 <= K < N), or run it as a Kubernetes indexed Job (JOB_COMPLETION_INDEX)" >&2
  exit 2
fi
root="${REPORT_ROOT:-reports/shards}"
exec shardfuzz fuzz --shard "$k/$n" --report "$root/shard-$k" "$@"
