#!/usr/bin/env bash
# The public API check: dumps the public API of the library's modules from the debug build with the toolchain's
# swift-api-digester and compares each with the baseline committed under api/. A breaking change (a declaration
# removed, renamed or retyped, a protocol requirement added, …) fails with the digester's list of changes; additions
# pass. Run after `swift build` (make test does); seconds, not minutes: nothing is rebuilt.
#
#   scripts/api-check.sh            compare with api/MODULE.json
#   scripts/api-check.sh --update   write the current API as the new baseline (make api-baseline)
#
# API_MODULES overrides the modules checked: Tandem (the umbrella an app imports) and the modules it re-exports.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=check
case "${1:-}" in
  "") ;;
  --update) mode=update ;;
  *) echo "usage: scripts/api-check.sh [--update]" >&2; exit 64 ;;
esac

read -r -a modules <<< "${API_MODULES:-Tandem TandemCore TandemMedia TandemNet}"
digester="$(dirname "$(readlink -f "$(command -v swift)")")/swift-api-digester"
[ -x "$digester" ] || { echo "api-check: no swift-api-digester next to swift ($digester)" >&2; exit 1; }
manifest=.build/debug.yaml
[ -f "$manifest" ] || { echo "api-check: no debug build ($manifest): run swift build first" >&2; exit 1; }
work=.build/api-check
mkdir -p "$work/module-cache" api

# The search paths a module was compiled with (its own and its C dependencies' module maps and headers), read from
# the build's manifest, so the digester loads the module exactly as the build made it.
flags_for() { python3 scripts/module-flags.py "$manifest" "$1" api-check; }

status=0
for module in "${modules[@]}"; do
  mapfile -t flags < <(flags_for "$module")
  current="$work/$module.json"
  if ! "$digester" -dump-sdk -module "$module" -o "$work/$module.all.json" -avoid-location -avoid-tool-args \
        -module-cache-path "$work/module-cache" "${flags[@]}" 2> "$work/$module.dump.log"; then
    cat "$work/$module.dump.log" >&2
    echo "api-check: could not dump $module's API (above)" >&2
    exit 1
  fi
  # The dump also holds what only the package sees (`package` declarations, marked isInternal) and @_spi ones:
  # neither is the library's API, so they stay out of the baseline.
  python3 - "$work/$module.all.json" "$current" <<'PRUNE'
import json, sys
dump = json.load(open(sys.argv[1]))
def prune(node):
    if 'children' in node:
        node['children'] = [prune(child) for child in node['children']
                            if not child.get('isInternal') and not child.get('spi_group_names')]
    return node
prune(dump['ABIRoot'])
with open(sys.argv[2], 'w') as out:
    json.dump(dump, out, indent=2, ensure_ascii=False)
    out.write('\n')
PRUNE
  baseline="api/$module.json"
  if [ "$mode" = update ]; then
    cp "$current" "$baseline"
    echo "api-check: $baseline is $module's API now"
    continue
  fi
  if [ ! -f "$baseline" ]; then
    echo "api-check: no baseline $baseline: run make api-baseline and commit it" >&2
    status=1
    continue
  fi
  report="$work/$module.breakage.txt"
  "$digester" -diagnose-sdk -input-paths "$baseline" -input-paths "$current" -o "$report" \
    -module-cache-path "$work/module-cache" 2> "$work/$module.diagnose.log" || true
  # The report lists changes under headers (/* Removed Decls */, …); every other non-empty line is a change.
  changes=$(grep -v '^\s*$' "$report" | grep -v '^/\*' || true)
  if [ -n "$changes" ]; then
    echo "api-check: $module's public API changed in a way that breaks code using it:" >&2
    sed 's/^/  /' <<< "$changes" >&2
    status=1
  else
    echo "api-check: $module: no breaking change"
  fi
done

if [ "$status" != 0 ]; then
  cat >&2 <<'EOF'
If the change is meant: run `make api-baseline`, commit api/ with it, and name the change in CHANGELOG.md under
[Unreleased] (Changed or Removed, with what code that embeds the library must do). Otherwise keep the old
declaration, e.g. as a deprecated spelling that calls the new one (see docs/DEVELOPMENT.md, "The public API check").
EOF
fi
exit "$status"
