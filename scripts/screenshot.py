#!/usr/bin/env python3
"""A picture of the top of a `loom report` page, as a reader first sees it,
for the docs (docs/serving.md, docs/tuning.md).

Usage: screenshot.py REPORT_DIR OUT.png [--height PX] [--width PX]

Renders REPORT_DIR/index.html with a headless Chromium (Debian: `apt-get
install chromium`; not needed by anything else in loom, so setup does not
install it), crops to --height pixels (default 1800) and writes an 8-bit
palette PNG. One error line and a non-zero exit when Chromium is missing or
the page cannot be rendered; OUT.png is written whole or not at all.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile


def die(msg):
    print("screenshot: error: " + msg, file=sys.stderr)
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report_dir")
    ap.add_argument("out")
    ap.add_argument("--height", type=int, default=1800)
    ap.add_argument("--width", type=int, default=1300)
    a = ap.parse_args()
    if not (200 <= a.height <= 20000 and 400 <= a.width <= 4000):
        die("--height must be 200..20000 and --width 400..4000")
    page = os.path.join(a.report_dir, "index.html")
    if not os.path.isfile(page):
        die("%s: no report page (run `loom report RESULT -o %s` first)" % (page, a.report_dir))
    browser = next((shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome") if shutil.which(b)), None)
    if browser is None:
        die("no headless Chromium found (Debian: apt-get install chromium)")
    try:
        from PIL import Image
    except ImportError:
        die("Pillow is not installed (it comes with matplotlib: pip install matplotlib)")
    with tempfile.TemporaryDirectory() as tmp:
        shot = os.path.join(tmp, "shot.png")
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--user-data-dir=" + os.path.join(tmp, "profile"), "--window-size=%d,%d" % (a.width, a.height),
               "--screenshot=" + shot, "file://" + os.path.abspath(page)]
        try:
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        except subprocess.TimeoutExpired:
            die("%s: Chromium did not finish within 120 s" % page)
        if r.returncode != 0 or not os.path.isfile(shot):
            die("%s: Chromium could not render the page (exit %d)" % (page, r.returncode))
        img = Image.open(shot).convert("RGB").quantize(colors=256)
        part = a.out + ".part"
        try:
            img.save(part, format="PNG", optimize=True)
            os.replace(part, a.out)
        except OSError as e:
            if os.path.exists(part):
                os.remove(part)
            die("%s: cannot write: %s" % (a.out, e.strerror or e))
    print("screenshot: wrote %s (%dx%d)" % (a.out, a.width, a.height), file=sys.stderr)


if __name__ == "__main__":
    main()
