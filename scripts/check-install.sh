#!/usr/bin/env bash
# Checks what `make install` put under PREFIX: the binary runs and reports VERSION, the completions and the man
# page are there and describe the real commands, the relay's systemd unit runs PREFIX/bin/tandem (and passes
# `systemd-analyze verify` where systemd's tools are installed). Usage: check-install.sh PREFIX VERSION
set -euo pipefail
prefix=$(cd "$1" && pwd) version=$2
fail() { echo "install check: $*" >&2; exit 1; }
bin=$prefix/bin/tandem
[ -x "$bin" ] || fail "no executable at $bin"
got=$("$bin" --version) || fail "$bin --version failed"
[ "$got" = "$version" ] || fail "tandem --version printed '$got', expected '$version'"
"$bin" --help | grep -q "host" || fail "tandem --help does not list 'host'"
bash_c=$prefix/share/bash-completion/completions/tandem
zsh_c=$prefix/share/zsh/site-functions/_tandem
fish_c=$prefix/share/fish/vendor_completions.d/tandem.fish
man=$prefix/share/man/man1/tandem.1
for f in "$bash_c" "$zsh_c" "$fish_c" "$man"; do [ -s "$f" ] || fail "missing or empty: $f"; done
bash -n "$bash_c" || fail "the bash completion script does not parse"
for sub in host join serve demo probe bench; do
  grep -q "$sub" "$bash_c" || fail "bash completion lacks '$sub'"
  grep -q "$sub" "$fish_c" || fail "fish completion lacks '$sub'"
  grep -q "$sub" "$zsh_c" || fail "zsh completion lacks '$sub'"
  grep -q "$sub" "$man" || fail "the man page lacks '$sub'"
done
grep -q '^\.Dt TANDEM 1' "$man" || fail "the man page has no '.Dt TANDEM 1' header"
grep -q 'invite-file' "$man" || fail "the man page does not document join's options"
[ -s "$prefix/share/tandem/media-samples/countdown.webm" ] || fail "the demo's sample is not installed"
unit=$prefix/lib/systemd/system/tandem-serve.service
[ -s "$unit" ] || fail "missing or empty: $unit"
grep -q "^ExecStart=$bin serve " "$unit" || fail "the unit's ExecStart does not run $bin serve: $(grep ExecStart= "$unit")"
grep -q '^TANDEM_SERVE_OPTIONS=' "$prefix/share/tandem/tandem-serve.env" || fail "the unit's example options file is missing"
if command -v systemd-analyze > /dev/null; then
  # --man=no: the unit's Documentation= names the man page, which is not on man's path under a scratch prefix.
  # It exits 0 on unknown keys and bad values (it ignores them): any word about the unit is a failure.
  said=$(systemd-analyze verify --man=no "$unit" 2>&1) || fail "systemd-analyze verify rejects $unit: $said"
  ! grep -q "tandem-serve" <<< "$said" || fail "systemd-analyze verify complains about $unit: $said"
fi
(cd / && "$bin" probe "$prefix/share/tandem/media-samples/countdown.webm" > /dev/null) || fail "tandem probe failed"
# The demo finds its sample from anywhere, not only from the source tree (its first lines are enough).
demo=$(cd / && timeout 4 "$bin" demo 2>&1 || true)
grep -q "^Tandem demo:" <<< "$demo" || fail "tandem demo did not start outside the source tree: $demo"
echo "install check: tandem $version, completions (bash, zsh, fish), man page and the relay's unit under $prefix"
