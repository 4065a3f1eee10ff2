#!/usr/bin/env bash
# The whole test suite in three lanes side by side, each one test at a time (`make test`).
#
# Most of the suite's wall time is spent waiting: processes starting, players prerolling, sessions on real sockets,
# browsers loading. One test at a time left two cores three-quarters idle (eleven minutes of tests for about four of
# CPU). Three lanes, each serial, keep at most three tests running at once on two cores, and the suites that keep a
# core busy (the browser, the benchmark smokes, the network lab, the CPU-bound simulations, the throttled stream) all
# in one lane, so that no two of them run at once:
#
#   heavy:            those suites, one after another
#   command line:     the command-line suites that start `tandem` processes (TandemCLITests), but the heavy ones
#   everything else:  state machines, sockets, players, the benchmarks' own tests, but the heavy ones
#
# The heavy lane prints as it goes; the other two write to logs that are printed when all have ended, each with when
# it ended. The exit status is the first failing lane's. Extra arguments go to every `swift test` run (the build flags).
set -u
cd "$(dirname "$0")/.."

scratch=$(mktemp -d /tmp/tandem-test.XXXXXX)
heavy='TandemCLITests\.(NetlabProcessTests|WebPeerBrowserTests|BenchSmokeTests)\b|TandemCoreTests\.ScenarioTests\b|TandemBenchTests\.ThrottledStreamTests\b'
cli='TandemCLITests\.'
pids=()
trap 'rm -rf "$scratch"' EXIT
trap 'kill "${pids[@]}" 2>/dev/null; exit 130' INT TERM
mkdir -p "$scratch/cli" "$scratch/heavy" "$scratch/rest"

# Two `swift test` runs starting at once contend for the build database ("database is locked"): each starts once the
# one before it is running tests (or has ended), at most a minute later.
wait_started() {
  for _ in $(seq 600); do
    grep -q '^◇ Test run started\|^Test Suite .* started' "$1" 2>/dev/null && break
    kill -0 "$2" 2>/dev/null || break
    sleep 0.1
  done
}

echo "the suite in three lanes, each one test at a time; the heavy suites print as they go, the others follow"
began=$SECONDS
ended() { echo "$1 $(( (SECONDS - began) / 60 )) min $(( (SECONDS - began) % 60 )) s after the lanes began"; }
# The longest lane first: each waits for the one before it to start.
( TMPDIR="$scratch/cli" swift test --skip-build --no-parallel --filter "$cli" --skip "$heavy" "$@" \
    > "$scratch/cli.log" 2>&1; status=$?; ended "the command-line lane ended" >> "$scratch/cli.log"; exit $status ) &
cli_pid=$!; pids+=("$cli_pid")
wait_started "$scratch/cli.log" "$cli_pid"
( TMPDIR="$scratch/rest" swift test --skip-build --no-parallel --skip "$cli" --skip "$heavy" "$@" \
    > "$scratch/rest.log" 2>&1; status=$?; ended "the lane of everything else ended" >> "$scratch/rest.log"; exit $status ) &
rest_pid=$!; pids+=("$rest_pid")
wait_started "$scratch/rest.log" "$rest_pid"
TMPDIR="$scratch/heavy" swift test --skip-build --no-parallel --filter "$heavy" "$@"
heavy_status=$?
ended "the heavy lane ended"
wait "$cli_pid"
cli_status=$?
wait "$rest_pid"
rest_status=$?

for lane in cli rest; do
  echo
  echo "──── $([ $lane = cli ] && echo "command-line processes" || echo "everything else") ────"
  cat "$scratch/$lane.log"
done
echo
status() { [ "$1" = 0 ] && echo passed || echo "FAILED ($1)"; }
echo "command-line processes: $(status $cli_status)"
echo "heavy suites (browser, benchmark smokes, network lab, simulations, throttled stream): $(status $heavy_status)"
echo "everything else: $(status $rest_status)"
for s in $cli_status $heavy_status $rest_status; do [ "$s" = 0 ] || exit "$s"; done
exit 0
