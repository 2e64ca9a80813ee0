#!/usr/bin/env bash
# ctest for `make test` / `make test-sanitize`: scripts/ctest.sh BUILD_DIR JOBS [CTEST ARGS...].
# Tests never reach a debuginfod server of the environment (Debian's login profile may name
# one); the debuginfod tests start their own on loopback.
# When a test fails, the failed ones run again, one at a time and verbosely, so that their whole
# output ends the log (CI keeps only its tail) and a flaky failure shows as one. The run still
# fails: a test that fails once is a bug to find, not to retry away.
set -uo pipefail
build=$1
jobs=$2
shift 2
cd "$build" || exit 1
unset DEBUGINFOD_URLS
if ctest -j "$jobs" --output-on-failure "$@"; then
  exit 0
fi
echo "=== the failed tests again, one at a time ==="
if ctest --rerun-failed --output-on-failure -V "$@"; then
  echo "=== they passed when run again: flaky (the run fails all the same) ==="
else
  echo "=== they failed again ==="
fi
exit 1
