#!/usr/bin/env bash
# The reference documentation: the DocC catalog Sources/Tandem/Tandem.docc over the public API of `Tandem` and the
# modules it re-exports (TandemCore, TandemMedia, TandemNet), built into a static site. The symbol graph is
# extracted from the debug build's modules with the toolchain's swift-symbolgraph-extract, loading `Tandem` with the
# search paths the build used (read from .build/debug.yaml by scripts/module-flags.py), so nothing is rebuilt;
# then the toolchain's docc converts it. Any warning fails it. Run after `swift build` (make docs does).
#
#   scripts/docs.sh        writes .build/docs/Tandem.doccarchive (DOCS_OUTPUT overrides the directory)
set -euo pipefail
cd "$(dirname "$0")/.."

toolchain="$(dirname "$(readlink -f "$(command -v swift)")")"
extract="$toolchain/swift-symbolgraph-extract"
docc="$toolchain/docc"
for tool in "$extract" "$docc"; do
  [ -x "$tool" ] || { echo "docs: no $(basename "$tool") next to swift ($tool)" >&2; exit 1; }
done
manifest=.build/debug.yaml
[ -f "$manifest" ] || { echo "docs: no debug build ($manifest): run swift build first" >&2; exit 1; }
output="${DOCS_OUTPUT:-.build/docs}"
work=.build/docs-work
rm -rf "$work" "$output/Tandem.doccarchive"
mkdir -p "$work/symbol-graphs" "$work/module-cache" "$output"

# Tandem's compile flags that find modules and headers (-I, -Xcc, -target), from the build's manifest.
mapfile -t flags < <(python3 scripts/module-flags.py "$manifest" Tandem docs)

# The symbols of the modules Tandem re-exports are documented as Tandem's own: that is how an app sees them.
"$extract" -module-name Tandem -minimum-access-level public -skip-inherited-docs \
  -experimental-allowed-reexported-modules=TandemCore,TandemMedia,TandemNet \
  -module-cache-path "$work/module-cache" -output-dir "$work/symbol-graphs" "${flags[@]}" \
  > "$work/extract.log" 2>&1 || { cat "$work/extract.log" >&2; echo "docs: could not extract Tandem's symbol graph" >&2; exit 1; }

log="$work/docc.log"
status=0
"$docc" convert Sources/Tandem/Tandem.docc --additional-symbol-graph-dir "$work/symbol-graphs" \
  --output-path "$output/Tandem.doccarchive" --fallback-display-name Tandem \
  --fallback-bundle-identifier org.tandem.Tandem --transform-for-static-hosting --warnings-as-errors \
  > "$log" 2>&1 || status=$?
warnings=$(grep -c -E '^(warning|error): |: (warning|error): ' "$log" || true)
if [ "$status" != 0 ] || [ "$warnings" != 0 ]; then
  cat "$log" >&2
  echo "docs: $warnings warnings or errors (above); the documentation builds without any" >&2
  exit 1
fi
echo "docs: $output/Tandem.doccarchive, no warnings (open it with a static server, e.g. python3 -m http.server -d $output/Tandem.doccarchive, at /documentation/tandem)"
