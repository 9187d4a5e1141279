#!/usr/bin/env python3
"""cli.reference_fresh: docs/cli.md equals what `loom --cli-reference` prints.

Usage: reference_test.py LOOM ROOT
"""
import difflib
import pathlib
import subprocess
import sys


def main():
    loom, root = sys.argv[1], pathlib.Path(sys.argv[2])
    got = subprocess.run([loom, "--cli-reference"], check=True, capture_output=True, text=True).stdout
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
