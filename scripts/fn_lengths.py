#!/usr/bin/env python3
"""Lengths of the hand-written C++ functions under host/ (docs/style: no
function longer than a screen; the tree keeps them at 150 lines or less).

Usage:
  scripts/fn_lengths.py [--top N] [--max LINES] [--allow FILE] [ROOT ...]

Prints the N longest functions (lines from the signature to the closing
brace, lambdas counted in their enclosing function). With --max, exits 1
when a function is longer than LINES, unless FILE lists it as
`path:function ceiling` and it is not longer than its ceiling: a ratchet
for functions still to be cut, which may shrink but never grow.

The scanner is lexical: comments, strings and character literals are
blanked, then every `{` whose statement ends in `)` (optionally followed by
const, noexcept, override, a trailing return type or a constructor's
initializer list) and that opens at namespace or class scope starts a
function body. Generated files (a first-lines `generated` marker) are
skipped.
"""
import argparse
import os
import re
import sys

KEYWORDS = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof", "static_assert"}


def blank(text):
    """Replaces comments and string/char literals with spaces, keeping newlines."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            m = re.match(r'R"([^(\s]*)\(', text[i:])
            if not m:
                out.append(c)
                i += 1
                continue
            end = ")" + m.group(1) + '"'
            j = text.find(end, i + m.end())
            j = n if j < 0 else j + len(end)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            if c == "'" and i > 0 and text[i - 1].isalnum():  # digit separator 1'000
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    """Yields (name, first_line, lines) of each function body at namespace/class scope."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    if "generated" in text[:400].lower() and "do not edit" in text[:400].lower():
        return
    code = blank(text)
    # Scope stack: 'ns' (namespace, class, extern, enum), 'init' (a brace
    # initializer at namespace or class scope) or 'fn' (inside a function).
    stack = []
    stmt_start = 0
    fn_open = None
    i, n = 0, len(code)
    while i < n:
        c = code[i]
        if c == "{":
            if fn_open is None:
                head = code[stmt_start:i]
                name = None if is_brace_init(head) else function_name(head)
                if name:
                    fn_open = (name, code.count("\n", 0, stmt_start + len(head) - len(head.lstrip())) + 1, len(stack))
                    stack.append("fn")
                elif is_brace_init(head):
                    stack.append("init")  # part of the statement: keeps its head
                    i += 1
                    continue
                else:
                    stack.append("ns")
            else:
                stack.append("fn")
            stmt_start = i + 1
        elif c == "}":
            kind = stack.pop() if stack else "ns"
            if fn_open is not None and len(stack) == fn_open[2]:
                end_line = code.count("\n", 0, i) + 1
                yield fn_open[0], fn_open[1], end_line - fn_open[1] + 1
                fn_open = None
            if kind != "init":
                stmt_start = i + 1
        elif c == ";" and fn_open is None:
            stmt_start = i + 1
        elif c == ":" and fn_open is None and code[i - 1] != ":" and code[i + 1 : i + 2] != ":":
            # access specifiers (public:) end a statement; a constructor's
            # initializer list does not (its head keeps the `)` before it).
            head = code[stmt_start:i].strip()
            if head in ("public", "private", "protected"):
                stmt_start = i + 1
        i += 1


def is_brace_init(head):
    """Whether a `{` after `head` (at namespace or class scope) opens a brace
    initializer: of a member in a constructor's initializer list, or of a
    variable (`x{...}`, `= {...}`), not a scope or a body."""
    h = " ".join(head.split())
    if not h or re.search(r"\b(namespace|class|struct|union|enum|extern)\b", h):
        return False
    if h.endswith(("=", ",", "(", "return")):
        return True
    last = h.rfind(")")
    if "->" in h[last + 1 :]:
        return False  # a trailing return type
    tail = h[last + 1 :].strip()
    qualifiers = re.fullmatch(r"(\s*\b(const|noexcept|override|final|mutable|volatile)\b|\s*&&?)*\s*", tail)
    return bool(re.search(r"[\w>]$", h)) and not qualifiers


def function_name(head):
    """The function's name if `head` (text before a `{`) is a function signature."""
    h = " ".join(head.split())
    if not h or h.startswith("#"):
        h = "\n".join(l for l in head.splitlines() if not l.strip().startswith("#"))
        h = " ".join(h.split())
    if re.search(r"\b(namespace|class|struct|union|enum)\b[^()]*$", h):
        return None
    if "=" in h and not re.search(r"\boperator\s*[=!<>+\-*/%&|^\[(]*=", h) and h.rfind("=") > h.rfind(")"):
        return None  # brace initializer
    # Strip a constructor's initializer list: `X::X(args) : a_(1), b_{2}`.
    m = re.match(r"(.*?\))\s*:[^:].*$", h)
    if m and not re.search(r"\)\s*->", h):
        h = m.group(1)
    h = re.sub(r"\s*->\s*[\w:<>,\s*&]+$", "", h)  # trailing return type
    h = re.sub(r"(\s*\b(const|noexcept|override|final|mutable|volatile)\b|\s*&&?)*\s*$", "", h)
    if not h.endswith(")"):
        return None
    # The name is the identifier before the parameter list's `(`.
    depth = 0
    for k in range(len(h) - 1, -1, -1):
        if h[k] == ")":
            depth += 1
        elif h[k] == "(":
            depth -= 1
            if depth == 0:
                m = re.search(r"((?:[\w~]+::)*(?:operator\s*[^\s(]+|~?\w+))\s*(<[^()]*>)?\s*$", h[:k])
                if not m:
                    return None
                name = m.group(1)
                if name.split("::")[-1] in KEYWORDS:
                    return None
                return name
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("roots", nargs="*", default=["host"])
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--max", type=int)
    ap.add_argument("--allow")
    args = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    found = []
    for r in args.roots:
        base = r if os.path.isabs(r) else os.path.join(root, r)
        for d, _, files in os.walk(base):
            for f in sorted(files):
                if f.endswith((".cc", ".h", ".cpp")):
                    p = os.path.join(d, f)
                    rel = os.path.relpath(p, root)
                    for name, line, length in functions(p):
                        found.append((length, rel, line, name))
    found.sort(key=lambda t: (-t[0], t[1], t[2]))
    for length, rel, line, name in found[: args.top]:
        print(f"{length:5d}  {rel}:{line}  {name}")
    if args.max is None:
        return 0
    allow = {}
    if args.allow:
        with open(args.allow) as f:
            for l in f:
                l = l.split("#", 1)[0].strip()
                if l:
                    key, ceiling = l.rsplit(None, 1)
                    allow[key] = int(ceiling)
    bad = 0
    for length, rel, line, name in found:
        if length <= args.max:
            continue
        key = f"{rel}:{name}"
        if key in allow and length <= allow[key]:
            continue
        limit = allow.get(key, args.max)
        print(f"fn_lengths: {rel}:{line}: {name} is {length} lines (limit {limit})", file=sys.stderr)
        bad = 1
    over = sum(1 for t in found if t[0] > args.max)
    print(f"{len(found)} functions, {over} over {args.max} lines")
    return bad


if __name__ == "__main__":
    sys.exit(main())
