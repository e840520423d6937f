#!/usr/bin/env python3
"""lr_fit.py -- fit the last stage's weights (discovery/index.c,
learned_stage) on the tune half's features.

    build/test/discovery_eval -L > feats.tsv   # tune half only
    python3 test/tools/lr_fit.py feats.tsv [--folds 4]

The score is the sweep's (discovery_eval -g): the mean over the three
catalog sizes of R@5 + MRR@10. Each tool among a query's first 20 is
ordered by (score over the best) + sum of weight x feature; the weights are
fitted by coordinate ascent on that score over a grid. Cross-validated
by server (the servers of the tune half in `folds` groups: fit on the
others, score the held-out group), so that the weights' gain is measured
on servers the fit did not see; then fitted on the whole tune half, which
is what index.c compiles in. Plain Python, no package.
"""
import sys
from collections import defaultdict

NAMES = ["cos", "qcover", "qname", "namesaid", "verb", "qdesc", "rank", "short", "verbsib"]
GRID = [-0.4, -0.2, -0.1, -0.05, -0.02, 0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.6]


def load(path):
    qs = defaultdict(list)   # (size, q) -> [(label, feats)]
    server = {}
    for line in open(path):
        p = line.rstrip("\n").split("\t")
        key = (int(p[0]), int(p[1]))
        server[key] = p[2]
        if p[3] == "miss":
            qs.setdefault(key, [])
            continue
        qs[key].append((int(p[3]), [float(x) for x in p[4:]]))
    return qs, server


def score(qs, keys, w, per_size=None):
    tot = defaultdict(float)
    cnt = defaultdict(int)
    for k in keys:
        cnt[k[0]] += 1
        rows = qs[k]
        best = None
        s = []
        for r, (lab, f) in enumerate(rows):
            v = f[0] + sum(wi * fi for wi, fi in zip(w, f[1:]))
            s.append((-v, r, lab))
        s.sort()
        for rank, (_, _, lab) in enumerate(s):
            if lab:
                if rank < 10:
                    tot[k[0]] += 1.0 / (rank + 1)
                if rank < 5:
                    tot[k[0]] += 1.0
                break
    sizes = sorted(cnt)
    if per_size is not None:
        per_size.update({z: tot[z] / cnt[z] for z in sizes})
    return sum(tot[z] / cnt[z] for z in sizes) / len(sizes) if sizes else 0.0


def fit(qs, keys, rounds=4, use=None):
    w = [0.0] * len(NAMES)
    cur = score(qs, keys, w)
    for _ in range(rounds):
        moved = False
        for i in range(len(NAMES)):
            if use is not None and i not in use:
                continue
            for g in GRID:
                t = list(w)
                t[i] = g
                v = score(qs, keys, t)
                if v > cur + 1e-9:
                    cur, w, moved = v, t, True
        if not moved:
            break
    return w, cur


def main():
    args = sys.argv[1:]
    folds = 4
    use = None
    if "--folds" in args:
        i = args.index("--folds")
        folds = int(args[i + 1])
        del args[i:i + 2]
    if "--use" in args:
        i = args.index("--use")
        use = {NAMES.index(n) for n in args[i + 1].split(",")}
        del args[i:i + 2]
    qs, server = load(args[0])
    keys = sorted(qs)
    servers = sorted({server[k] for k in keys})
    base = score(qs, keys, [0.0] * len(NAMES))
    print(f"tune half, weights 0: {base:.4f}")
    # cross-validation by server
    cv_base = cv_fit = 0.0
    for f in range(folds):
        held = {s for j, s in enumerate(servers) if j % folds == f}
        tr = [k for k in keys if server[k] not in held]
        te = [k for k in keys if server[k] in held]
        w, _ = fit(qs, tr, use=use)
        b, v = score(qs, te, [0.0] * len(NAMES)), score(qs, te, w)
        cv_base += b * len(te)
        cv_fit += v * len(te)
        print(f"fold {f}: {len(held)} servers held out, {b:.4f} -> {v:.4f}  "
              + " ".join(f"{n}={x:g}" for n, x in zip(NAMES, w) if x))
    n = len(keys)
    print(f"cross-validated (held-out servers): {cv_base / n:.4f} -> {cv_fit / n:.4f}")
    w, v = fit(qs, keys, use=use)
    per = {}
    score(qs, keys, w, per)
    print(f"whole tune half: {base:.4f} -> {v:.4f}  ("
          + ", ".join(f"{z}: {x:.4f}" for z, x in sorted(per.items())) + ")")
    print("weights: " + " ".join(f"{n}={x:g}" for n, x in zip(NAMES, w)))


if __name__ == "__main__":
    main()
