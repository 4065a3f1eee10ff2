#!/usr/bin/env bash
# Runs the benchmarks whose figures docs/BENCHMARKS.md publishes, with a release build, one after another (nothing else
# should run on the machine meanwhile). Writes each report (.txt), its figures (.json) and plot (.svg) to
# docs/bench/ (or the directory given).
#
#   scripts/publish-bench.sh [OUTPUT_DIR] [SECONDS] [PART ...]   (defaults: docs/bench, 600, sync relay clock)
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-docs/bench}"
seconds="${2:-600}"
parts="${*:3}"
parts="${parts:-sync relay clock}"
mkdir -p "$out"
# A clean release build with `make release`'s flags: incremental release builds here have linked stale code after a
# struct in a library target changed (a crash at the first late joiner), and published figures must come from the
# code as it is.
rm -rf .build/release .build/*-linux-gnu/release
swift build -c release --static-swift-stdlib -Xswiftc -enforce-exclusivity=unchecked --product tandem
tandem=.build/release/tandem
wants() { [[ " $parts " == *" $1 "* ]]; }

sync() {  # name, then bench sync arguments
  local name="$1"; shift
  echo "== $name: tandem bench sync $*" >&2
  "$tandem" bench sync "$@" --json "$out/$name.json" --plot "$out/$name.svg" | tee "$out/$name.txt"
}

if wants sync; then
sync loopback-4 --peers 4 --link loopback --duration "$seconds" --policy tandem syncplay-rules jellyfin-rules
sync loopback-16 --peers 16 --link loopback --duration "$seconds"
sync wan-4 --peers 4 --link wan --duration "$seconds"
sync harsh-4 --peers 4 --link harsh --duration "$seconds"
sync asymmetric-4 --peers 4 --link asymmetric --duration "$seconds"
sync loopback-32 --peers 32 --link loopback --duration "$(( seconds < 120 ? seconds : 120 ))"
fi

if wants relay; then
echo "== relay" >&2
"$tandem" bench relay --participants 125 --duration 20 --ramp --max-participants 4000 | tee "$out/relay.txt"
# The ramp stops at the first level that misses a target; the issue's load (1,000 participants) is run as well.
for n in 500 1000; do "$tandem" bench relay --participants "$n" --duration 20 | tee -a "$out/relay.txt"; done
# The same load through the bare relay: this machine's floor for any relay that writes each delivery.
"$tandem" bench relay --floor --participants 125 --duration 20 --ramp --max-participants 8000 | tee -a "$out/relay.txt"
fi

if wants clock; then
echo "== clock" >&2
"$tandem" bench clock | tee "$out/clock.txt"
fi
