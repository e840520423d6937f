"""tally.py -- the checks of the Python test scripts run by the suites
(owners.py, stored.py): one line per check, "ok: NAME" or "FAILED: NAME"
with what was wanted and got, and the script's exit status (1 when one
failed), which lib.sh's check reads."""
import sys

failed = 0


def check(name, want, got):
    global failed
    if want == got:
        print("ok: " + name)
    else:
        failed += 1
        print("FAILED: %s\n  want: %r\n  got:  %r" % (name, want, got))


def finish():
    sys.exit(1 if failed else 0)
