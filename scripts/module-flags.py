#!/usr/bin/env python3
"""The flags a module of the debug build was compiled with that find modules and headers (-I, -Xcc, -target), one
a line, read from the build's manifest (.build/debug.yaml), so that a toolchain tool (swift-api-digester,
swift-symbolgraph-extract) loads the module exactly as the build made it. Used by scripts/api-check.sh and
scripts/docs.sh.

    scripts/module-flags.py MANIFEST MODULE [NAME]    NAME prefixes the error when MODULE is not in MANIFEST
"""
import json
import re
import sys


def flags(manifest, module):
    key = re.compile(r'^  "C\.' + re.escape(module) + r'-[^"]*-debug\.module":')
    lines = open(manifest).read().split('\n')
    for i, line in enumerate(lines):
        if key.match(line):
            for follow in lines[i + 1:i + 12]:
                if follow.strip().startswith('args:'):
                    args = json.loads(follow.strip()[len('args:'):])
                    break
            else:
                continue
            break
    else:
        return None
    keep, i = [], 0
    while i < len(args):
        a = args[i]
        if a in ('-I', '-Xcc', '-target') and i + 1 < len(args):
            keep += [a, args[i + 1]]
            i += 2
            continue
        if a.startswith('-I') and len(a) > 2:
            keep.append(a)
        i += 1
    return keep


if __name__ == '__main__':
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    manifest, module = sys.argv[1], sys.argv[2]
    name = sys.argv[3] if len(sys.argv) == 4 else 'module-flags'
    found = flags(manifest, module)
    if found is None:
        sys.exit(f'{name}: {module} is not in {manifest}')
    print('\n'.join(found))
