#!/usr/bin/env python3
"""Names with internal linkage are unique within each unity batch.

With LOOM_UNITY_BUILD (the default), CMake compiles a target's sources in
batches: build/<preset>/**/Unity/unity_N_cxx.cxx includes up to eight .cc
files into one translation unit. Two files of a batch that each define a
helper `fail()` in an anonymous namespace then meet in one scope: a second
definition of the same signature fails to compile, but an overload with
other parameter types compiles and may silently take the other file's calls.

This check reads every unity batch of a build folder and lists each name
that two of its files define at namespace scope with internal linkage
(inside `namespace {`, or `static`); an alias written identically in both
(`using json = nlohmann::json;`) names the same type and passes. A macro
that a source defines must be #undef'd before the next file of its batch.
Usage: unity_names_test.py BUILD_DIR.
A build without unity batches passes with a note.
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^#include\s+"([^"]+)"')
ANON_OPEN = re.compile(r"^namespace\s*\{")
ANON_CLOSE = re.compile(r"^\}\s*//\s*namespace\s*$")
TYPE = re.compile(r"^(?:template\s*<.*>\s*)?(?:struct|class|union|enum(?:\s+class)?)\s+([A-Za-z_]\w*)\s*(?:final\s*)?[:{;]")
ALIAS = re.compile(r"^using\s+([A-Za-z_]\w*)\s*=")
FUNC = re.compile(r"^(?!return\b|else\b|case\b|if\b|for\b|while\b|switch\b|using\b|namespace\b|template\b|typedef\b)"
                  r"[A-Za-z_][\w:<>,\s\*&\[\]]*?[\s\*&]\*?&?(operator\s*\S+?|[A-Za-z_]\w*)\s*\(")
VAR = re.compile(r"^(?:static\s+|inline\s+|constexpr\s+|const\s+|thread_local\s+)+[\w:<>,\s\*&]*?([A-Za-z_]\w*)"
                 r"\s*(?:\[[^\]]*\])?\s*(?:=|\{|;)")


def internal_names(path):
    """Names defined at namespace scope with internal linkage in one source."""
    names = {}
    anon = 0
    try:
        text = pathlib.Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return names
    for lineno, line in enumerate(text.splitlines(), 1):
        if ANON_OPEN.match(line):
            anon += 1
            continue
        if ANON_CLOSE.match(line) and anon:
            anon -= 1
            continue
        if not line or line[0] in " \t#/}{)":
            continue
        static = line.startswith("static ")
        if not anon and not static:
            continue
        for rx in (TYPE, ALIAS, FUNC, VAR) if anon else (FUNC, VAR):
            m = rx.match(line)
            if m:
                names.setdefault(m.group(1).replace(" ", ""), (lineno, line.strip() if rx is ALIAS else None))
                break
    return names


DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)")
UNDEF = re.compile(r"^\s*#\s*undef\s+([A-Za-z_]\w*)")


def leaked_macros(path):
    """Macros a source defines and does not #undef: they reach the next files of its batch."""
    live = {}
    try:
        lines = pathlib.Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return live
    for lineno, line in enumerate(lines, 1):
        m = DEFINE.match(line)
        if m:
            live[m.group(1)] = lineno
        m = UNDEF.match(line)
        if m:
            live.pop(m.group(1), None)
    return live


def main():
    if len(sys.argv) != 2:
        print("usage: unity_names_test.py BUILD_DIR", file=sys.stderr)
        return 2
    build = pathlib.Path(sys.argv[1])
    batches = sorted(build.glob("**/CMakeFiles/*/Unity/unity_*.cxx"))
    if not batches:
        print(f"unity_names_test: no unity batches under {build} (LOOM_UNITY_BUILD=OFF): nothing to check")
        return 0
    clashes = 0
    for batch in batches:
        files = []
        for line in batch.read_text().splitlines():
            m = INCLUDE.match(line)
            if m:
                files.append(m.group(1))
        seen = {}
        for f in files[:-1]:
            for name, lineno in leaked_macros(f).items():
                print(f"{f}:{lineno}: macro '{name}' is not #undef'd and reaches the files after it in "
                      f"{batch.relative_to(build)}: #undef it at the end of the file")
                clashes += 1
        for f in files:
            for name, (lineno, alias) in internal_names(f).items():
                if name in seen and seen[name][0] != f:
                    first, first_line, first_alias = seen[name]
                    if alias is not None and alias == first_alias:
                        continue  # the same alias twice names the same type: no clash
                    print(f"{f}:{lineno}: '{name}' has internal linkage here and in {first}:{first_line}, "
                          f"one unity batch ({batch.relative_to(build)}): rename one")
                    clashes += 1
                else:
                    seen.setdefault(name, (f, lineno, alias))
    print(f"unity_names_test: {len(batches)} batches, {clashes} clashing names")
    return 1 if clashes else 0


if __name__ == "__main__":
    sys.exit(main())
