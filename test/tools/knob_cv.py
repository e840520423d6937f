#!/usr/bin/env python3
"""knob_cv.py -- would re-fitting the ranker's knobs generalize?

    python3 test/tools/knob_cv.py [FOLDS]      # from the repository root,
                                              # after make build/test/discovery_eval

Cross-validation by server within the tune half (the test half is never
read): the tune half's servers, sorted by name, fall in FOLDS groups
(default 4) by rank modulo FOLDS. For each group, a coordinate ascent fits
the knobs of `discovery_eval -g` on the other groups (TG_EVAL_FOLD=k/n:
each round takes the sweep's best single change of any knob, while it
gains 0.0005 or more, at most 3 rounds), then both the defaults and the
fitted knobs are scored on the held-out group (TG_EVAL_FOLD=k/n/held).
The score is the sweep's: mean over the sizes of R@5 + MRR@10. TG_SHARED
as for discovery_eval. Plain Python, no package.
"""
import os
import re
import subprocess
import sys

EVAL = "build/test/discovery_eval"
LINE = re.compile(r"^(\S+)\s+(-?[\d.]+)\s+([\d.]+)\s+\(100: ")


def sweep(fold, knobs, only=None):
    env = dict(os.environ, TG_EVAL_FOLD=fold,
               TG_EVAL_KNOBS=" ".join(f"{k}={v}" for k, v in knobs.items()))
    env.pop("TG_EVAL_SWEEP", None)
    if only:
        env["TG_EVAL_SWEEP"] = only
    out = subprocess.run([EVAL, "-g"], env=env, capture_output=True, text=True,
                         check=True).stdout
    return [(m.group(1), float(m.group(2)), float(m.group(3)))
            for m in map(LINE.match, out.splitlines()) if m]


def score_at(fold, knobs):
    """The score with `knobs` as they are: the row of a sweep of `coverage`
    (default 0) at the value the knobs give it."""
    v = knobs.get("coverage", 0.0)
    return next(s for k, x, s in sweep(fold, knobs, "coverage") if abs(x - v) < 1e-6)


def main():
    folds = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    before = after = 0.0
    for f in range(folds):
        train = f"{f}/{folds}"
        knobs = {}
        cur = score_at(train, knobs)
        for rnd in range(3):
            k, x, s = max(sweep(train, knobs), key=lambda r: r[2])
            if s <= cur + 0.0005:
                break
            knobs[k], cur = x, s
            print(f"group {f} round {rnd}: {k}={x:g} (other groups: {s:.4f})", flush=True)
        b = score_at(train + "/held", {})
        a = score_at(train + "/held", knobs)
        print(f"group {f} held out: {b:.4f} -> {a:.4f} with {knobs}", flush=True)
        before += b
        after += a
    print(f"mean over the groups: {before / folds:.4f} -> {after / folds:.4f}")


if __name__ == "__main__":
    main()
