#!/usr/bin/env python3
"""cli.reference_fresh: docs/cli.md equals what `loom --cli-reference` prints,
and every help text follows one style: a description starts with a capital
letter and ends without a full stop, an argument's name is in capitals.

Usage: reference_test.py LOOM ROOT
"""
import difflib
import pathlib
import re
import subprocess
import sys


def style(text):
    """Help texts that break the house style, as 'command: what'."""
    bad, command, after_heading = [], "", False
    for line in text.splitlines():
        if line.startswith("## `"):
            command, after_heading = line[4:-1], True
            continue
        if after_heading and line.strip():
            after_heading = False
            if not line[0].isupper() or line.endswith("."):
                bad.append(f"{command}: description '{line}'")
        if line.startswith("| `") and command:
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            name, desc = cells[0].strip("`"), cells[-1]
            if not name.startswith("-") and name != name.upper():
                bad.append(f"{command}: argument '{name}' is not in capitals")
            if desc and (not desc[0].isupper() or desc.endswith(".")):
                bad.append(f"{command} {name}: help '{desc}'")
    return bad


def main():
    loom, root = sys.argv[1], pathlib.Path(sys.argv[2])
    got = subprocess.run([loom, "--cli-reference"], check=True, capture_output=True, text=True).stdout
    bad = style(got)
    if bad:
        print("\n".join(bad))
        print(f"{len(bad)} help text(s) break the style (capital first letter, no full stop, arguments in capitals)")
        return 1
    doc = root / "docs" / "cli.md"
    want = doc.read_text() if doc.exists() else ""
    if got == want:
        print(f"{doc}: fresh ({got.count(chr(10))} lines)")
        return 0
    diff = list(difflib.unified_diff(want.splitlines(), got.splitlines(), "docs/cli.md", "loom --cli-reference",
                                     lineterm="", n=1))
    print("\n".join(diff[:40]))
    print(f"{doc} is stale; regenerate it: {loom} --cli-reference > docs/cli.md")
    return 1


if __name__ == "__main__":
    sys.exit(main())
