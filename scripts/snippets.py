#!/usr/bin/env python3
"""Copies the examples' marked regions into the documentation.

A line `<!-- snippet: Examples/WatchTogether/main.swift#host -->` in README.md, CHANGELOG.md, docs/*.md or the DocC
catalog (Sources/Tandem/Tandem.docc) is followed by a ```swift block; this script replaces the block's lines with
the lines of that file between `// snippet: host` and `// snippet end` (less the indentation they share, indented
as the block's fence is). DocumentationTests checks that every block is the region as it is now.

    python3 scripts/snippets.py          rewrite the blocks that differ, naming each file it changed
"""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = re.compile(r'^\s*<!-- snippet: ([^#\s]+)#([\w-]+) -->$')


def region(path, name):
    try:
        lines = open(os.path.join(ROOT, path), encoding='utf-8').read().split('\n')
        start = next(i for i, line in enumerate(lines) if line.strip() == f'// snippet: {name}')
        end = next(i for i in range(start + 1, len(lines)) if lines[i].strip() == '// snippet end')
    except (OSError, StopIteration):
        sys.exit(f'snippets: no region `// snippet: {name}` … `// snippet end` in {path}')
    body = lines[start + 1:end]
    shared = min((len(line) - len(line.lstrip(' ')) for line in body if line.strip()), default=0)
    return [line[shared:] if line.strip() else '' for line in body]


def rewrite(document):
    lines = open(document, encoding='utf-8').read().split('\n')
    out, i, changed = [], 0, False
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        marker = MARKER.match(line)
        if not marker:
            continue
        while i < len(lines) and not lines[i].strip():
            out.append(lines[i])
            i += 1
        if i == len(lines) or not lines[i].strip().startswith('```swift'):
            sys.exit(f'{document}: a snippet marker not followed by a ```swift block: {line.strip()}')
        indent = lines[i][:len(lines[i]) - len(lines[i].lstrip(' '))]
        out.append(lines[i])
        i += 1
        old = []
        while i < len(lines) and lines[i].strip() != '```':
            old.append(lines[i])
            i += 1
        new = [indent + text if text else '' for text in region(marker.group(1), marker.group(2))]
        changed |= new != old
        out.extend(new)
    if changed:
        with open(document, 'w', encoding='utf-8') as f:
            f.write('\n'.join(out))
        print(f'snippets: {os.path.relpath(document, ROOT)}')


documents = [os.path.join(ROOT, name) for name in ('README.md', 'CHANGELOG.md')]
documents += sorted(glob.glob(os.path.join(ROOT, 'docs', '*.md')))
documents += sorted(glob.glob(os.path.join(ROOT, 'Sources', 'Tandem', 'Tandem.docc', '*.md')))
for document in documents:
    rewrite(document)
