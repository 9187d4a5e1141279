"""What the scripts that drive the `loom` binary share: running a command
whose `--json` result is read back, and the entry point that turns a failure
into one line on stderr and an exit status."""
import json
import subprocess
import sys


def run_json(args, what):
    """Runs `args` and returns its stdout read as JSON; a non-zero exit raises
    RuntimeError("WHAT: the command's stderr")."""
    try:
        r = subprocess.run(args, capture_output=True, text=True)
    except OSError as e:
        raise RuntimeError("%s: cannot run %s: %s" % (what, args[0], e.strerror))
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (what, r.stderr.strip()))
    try:
        return json.loads(r.stdout)
    except ValueError as e:
        raise RuntimeError("%s: the output is not JSON (%s)" % (what, e))


def script_main(name, main):
    """Calls main() and exits with its status; RuntimeError becomes
    "NAME: error: ..." and exit 1, an interrupt exit 130."""
    try:
        sys.exit(main())
    except RuntimeError as e:
        print("%s: error: %s" % (name, e), file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("%s: interrupted" % name, file=sys.stderr)
        sys.exit(130)
