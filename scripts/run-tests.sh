#!/usr/bin/env bash
# The whole test suite in two halves side by side, each one test at a time (`make test`).
#
# Most of the suite's wall time is spent waiting: processes starting, players prerolling, sessions on real sockets,
# browsers loading. One test at a time left two cores three-quarters idle (eleven minutes of tests for about four of
# CPU). Two halves, each serial, keep at most two tests running at once on two cores — never a CPU-bound simulation
# beside more than one other test — and take the suite from about eleven minutes to about six.
#
#   first half:  the command-line suites that start `tandem` processes (TandemCLITests), but its benchmark smokes
#   second half: everything else (state machines and simulations, sockets, players, the benchmark smokes)
#
# The first half prints as it goes; the second writes to a log that is printed when both have ended. The exit status
# is the first failing half's. Extra arguments go to both `swift test` runs (the build flags).
set -u
cd "$(dirname "$0")/.."

scratch=$(mktemp -d /tmp/tandem-test.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
first='TandemCLITests\.(?!BenchSmokeTests\b)'
mkdir -p "$scratch/1" "$scratch/2"

echo "the suite in two halves, each one test at a time; the second half's output follows the first's"
TMPDIR="$scratch/2" swift test --skip-build --no-parallel --skip "$first" "$@" > "$scratch/second.log" 2>&1 &
second_pid=$!
trap 'kill "$second_pid" 2>/dev/null; exit 130' INT TERM
# Two `swift test` runs starting at once contend for the build database ("database is locked"): the first half starts
# once the second is running tests (or has ended), at most a minute later.
for _ in $(seq 600); do
  grep -q '^◇ Test run started\|^Test Suite .* started' "$scratch/second.log" 2>/dev/null && break
  kill -0 "$second_pid" 2>/dev/null || break
  sleep 0.1
done
TMPDIR="$scratch/1" swift test --skip-build --no-parallel --filter "$first" "$@"
first_status=$?
wait "$second_pid"
second_status=$?

echo
echo "──── second half (everything but the command-line process suites) ────"
cat "$scratch/second.log"
echo
echo "first half (command-line processes): $([ $first_status = 0 ] && echo passed || echo "FAILED ($first_status)")"
echo "second half (everything else): $([ $second_status = 0 ] && echo passed || echo "FAILED ($second_status)")"
[ $first_status = 0 ] || exit $first_status
exit $second_status
