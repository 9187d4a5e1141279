#!/usr/bin/env python3
"""Checks the layering that docs/architecture.md describes, from the tree itself.

  includes   no backend includes another backend's folder; the hardware model
             (host/hw) and the compiler include no backend, simulator or runtime
  links      the table "What links what" in docs/architecture.md lists exactly
             the loom libraries each CMake library links
  roots      every library includes only headers of the libraries it links

Usage: layering_test.py ROOT CASE
"""
import pathlib
import re
import sys

# Backends and the folders that hold them; a header of a backend is included
# by its path under the folder's include root (host/ or sim/).
BACKENDS = {
    "ref": ("host/backends/ref", "backends/ref/"),
    "rtl": ("host/backends/rtl", "backends/rtl/"),
    "xrt": ("host/backends/xrt", "backends/xrt/"),
    "tlm": ("sim/tlm", "tlm/"),
    "cosim": ("sim/cosim", "cosim/"),
}
# Not a backend's own code: the emulation of the XRT library that CI runs the
# xrt backend against. Its card is the rtl backend's device, by design.
EXEMPT = {"host/backends/xrt/emu": {"rtl"}}

# Folders that must stay below every backend: what they may include.
BELOW = {
    "host/hw": ("common/", "loom/", "hw/"),
    "host/hw/verilated": ("common/", "loom/", "hw/", "verilated", "V"),
    "sim/memory": ("common/", "loom/", "hw/", "device/", "memory/"),
    # The compiler emits HLS unit calls in the device interface's own terms
    # (host/device: the seam, not the runtime library).
    "host/compiler": ("common/", "loom/", "hw/", "ir/", "plan/", "compiler/", "device/",
                      "loom_hls_latency.h"),
}

SOURCES = (".h", ".cc", ".in", ".inc")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def files_in(root, folder, recursive=True):
    base = root / folder
    it = base.rglob("*") if recursive else base.glob("*")
    return [p for p in it if p.is_file() and p.suffix in SOURCES]


def case_includes(root):
    bad = []
    for name, (folder, _) in BACKENDS.items():
        for f in files_in(root, folder):
            rel = f.relative_to(root).as_posix()
            exempt = set()
            for pre, names in EXEMPT.items():
                if rel.startswith(pre + "/"):
                    exempt |= names
            for inc in INCLUDE.findall(f.read_text()):
                for other, (_, prefix) in BACKENDS.items():
                    if other != name and other not in exempt and inc.startswith(prefix):
                        bad.append(f"{rel}: includes {inc}, a header of the {other} backend")
    for folder, allowed in BELOW.items():
        nested = [b for b in BELOW if b != folder and b.startswith(folder + "/")]
        for f in files_in(root, folder):
            rel = f.relative_to(root).as_posix()
            if any(rel.startswith(n + "/") for n in nested):
                continue
            for inc in INCLUDE.findall(f.read_text()):
                if not inc.startswith(allowed):
                    bad.append(f"{rel}: includes {inc}; {folder} may include only {', '.join(allowed)}")
    return bad


def cmake_links(root):
    """{library: (folder, {loom libraries it links})} from every CMakeLists.txt
    under host/, sim/ and hls/."""
    libs = {}
    for cm in sorted(p for d in ("host", "sim", "hls") for p in (root / d).rglob("CMakeLists.txt")):
        text = re.sub(r"#[^\n]*", "", cm.read_text())
        folder = cm.parent.relative_to(root).as_posix()
        for m in re.finditer(r"add_library\(\s*(loom_\w+)", text):
            if m.group(1).endswith("_warnings"):
                continue
            libs.setdefault(m.group(1), [folder, set()])[0] = folder
        for m in re.finditer(r"target_link_libraries\(\s*(loom_\w+)([^)]*)\)", text):
            name = m.group(1)
            deps = {d for d in m.group(2).split() if d.startswith("loom_") and not d.endswith("_warnings")}
            libs.setdefault(name, [folder, set()])[1].update(deps)
    return libs


def doc_table(root):
    text = (root / "docs/architecture.md").read_text()
    start = text.find("## What links what")
    if start < 0:
        return None
    rows = {}
    for line in text[start:].splitlines()[1:]:
        if line.startswith("## "):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) != 3 or not cells[0].startswith("`loom_"):
            continue
        deps = set(re.findall(r"`(loom_\w+)`", cells[2]))
        rows[cells[0].strip("`")] = (cells[1].strip("`"), deps)
    return rows


def case_links(root):
    libs = cmake_links(root)
    rows = doc_table(root)
    if rows is None:
        return ["docs/architecture.md: no section \"## What links what\""]
    bad = []
    for name, (folder, deps) in sorted(libs.items()):
        if name not in rows:
            bad.append(f"docs/architecture.md: library {name} ({folder}) is not in \"What links what\"")
            continue
        dfolder, ddeps = rows[name]
        if dfolder != folder:
            bad.append(f"docs/architecture.md: {name} is in {folder}, the table says {dfolder}")
        if ddeps != deps:
            miss = ", ".join(sorted(deps - ddeps)) or "-"
            extra = ", ".join(sorted(ddeps - deps)) or "-"
            bad.append(f"docs/architecture.md: {name} links {', '.join(sorted(deps)) or 'nothing'} "
                       f"(table lacks: {miss}; table has but CMake does not: {extra})")
    for name in sorted(set(rows) - set(libs)):
        bad.append(f"docs/architecture.md: {name} is in \"What links what\" but no CMakeLists.txt adds it")
    return bad


def owners(libs):
    """{folder: {libraries added there}}; loom_spec's headers are host/spec."""
    out = {}
    for name, (folder, _) in libs.items():
        out.setdefault("host/spec" if name == "loom_spec" else folder, set()).add(name)
    return out


def closure(libs, names):
    seen, todo = set(), list(names)
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(libs.get(n, ("", set()))[1])
    return seen


def owner_of(path, by_folder):
    """The libraries of the folder nearest above `path` (a file under root)."""
    best = None
    for folder in by_folder:
        if path.startswith(folder + "/") and (best is None or len(folder) > len(best)):
            best = folder
    return best


def case_roots(root):
    """Every library includes only headers of itself and of what it links
    (each library's include root is its folder, whatever -I the build
    gives): a header reached without its library linked is a hidden
    dependency. Libraries that share a folder are checked together."""
    libs = cmake_links(root)
    by_folder = owners(libs)
    bad = []
    for folder, names in sorted(by_folder.items()):
        allowed = closure(libs, names)
        nested = [f for f in by_folder if f != folder and f.startswith(folder + "/")]
        for f in files_in(root, folder):
            rel = f.relative_to(root).as_posix()
            # HLS C-simulation testbenches (tb_*) are executables beside the kernels, not library sources.
            if any(rel.startswith(n + "/") for n in nested) or f.name.startswith("tb_"):
                continue
            for inc in INCLUDE.findall(f.read_text()):
                for base in ("host", "sim", "hls", "hls/units", f.parent.relative_to(root).as_posix()):
                    target = root / base / inc
                    if target.is_file():
                        break
                else:
                    continue  # a system, external or generated header
                tfolder = owner_of(target.resolve().relative_to(root.resolve()).as_posix(), by_folder)
                if tfolder is None or by_folder[tfolder] & allowed:
                    continue
                bad.append(f"{rel}: includes {inc}, a header of {', '.join(sorted(by_folder[tfolder]))}, "
                           f"which {', '.join(sorted(names))} does not link")
    return bad


def main():
    root, case = pathlib.Path(sys.argv[1]), sys.argv[2]
    bad = {"includes": case_includes, "links": case_links, "roots": case_roots}[case](root)
    for b in bad:
        print(b)
    print(f"layering.{case}: {len(bad)} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
