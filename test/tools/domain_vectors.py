#!/usr/bin/env python3
"""domain_vectors.py -- word vectors learned from software package descriptions,
to measure against the GloVe table search_tools ships (docs/discovery_quality.md,
seventh pass). A measuring tool: its table is not
shipped, because it did not hold on the test half.

    python3 test/tools/domain_vectors.py corpus DEBIAN NPM_TSV PYPI_TSV > corpus.txt
    /usr/bin/python3 test/tools/domain_vectors.py table corpus.txt > wordvec.bin

`corpus` writes one document a line, Snowball stems joined by spaces: each
package's name and description from Debian (`apt-cache dumpavail`, one
description a package name), npm and PyPI (name, summary: TSV files with
the summary in column 4 and 5). Descriptions that mention MCP or the Model
Context Protocol are left out, so the vectors know no eval server's own
text. `table` counts the stems that co-occur within 5 words (MIN_COUNT 15,
at most 40,000 stems), weighs the counts by positive PMI (context counts
smoothed by the power 0.75), keeps 100 dimensions of a truncated SVD
(U * sqrt(S)) and writes them in discovery/wordvec.bin's layout (see
discovery/wordvec_gen.py), so a build with it in place of wordvec.bin
ranks with them. `table` needs numpy and scipy (Debian's python3-numpy and
python3-scipy).
"""
import collections
import re
import struct
import sys

sys.path.insert(0, __file__.rsplit("/test/", 1)[0] + "/discovery")
from wordvec_gen import STOP, fnv1a  # noqa: E402  (the same stop words and checksum)
from lexicon_gen import Stemmer  # noqa: E402

SKIP = re.compile(r"\bmcp\b|model.?context.?protocol", re.I)
MIN_COUNT, WINDOW, DIMS, MAX_STEMS = 15, 5, 100, 40000


def words(stem, text):
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    return [stem(w) for w in (x.lower() for x in re.findall(r"[A-Za-z][A-Za-z0-9]*", text))
            if 2 <= len(w) <= 24 and w not in STOP]


def corpus(debian, npm, pypi):
    stem, out = Stemmer(), sys.stdout

    def emit(name, text):
        if not (SKIP.search(name) or SKIP.search(text)):
            toks = words(stem, re.sub(r"[@/]", " ", name)) + words(stem, text)
            if len(toks) >= 3:
                out.write(" ".join(toks) + "\n")

    for path, col in ((npm, 3), (pypi, 4)):
        for line in open(path, errors="replace"):
            p = line.rstrip("\n").split("\t")
            if len(p) > col and len(p[col]) > 10:
                emit(p[0], re.sub(r"^\[tested here:[^\]]*\]", "", p[col]))
    seen, name, desc = set(), None, None
    for line in open(debian, errors="replace"):
        if line.startswith("Package: "):
            name = line[9:].strip()
        elif line.startswith("Description: "):
            desc = [line[13:]]
        elif desc is not None and line.startswith(" "):
            desc.append(line)
        elif desc is not None:
            if name not in seen:
                seen.add(name)
                emit(name, " ".join(desc))
            desc = None


def vectors(path):
    import numpy as np
    import scipy.sparse as sp
    from scipy.sparse.linalg import svds
    lines = open(path).read().split("\n")
    cnt = collections.Counter(w for l in lines for w in l.split())
    vocab = [w for w, c in cnt.most_common(MAX_STEMS) if c >= MIN_COUNT]
    idx = {w: i for i, w in enumerate(vocab)}
    ids = []
    for l in lines:
        ids.extend(idx.get(w, -1) for w in l.split())
        ids.extend([-2] * WINDOW)  # a document's end: no pair spans it
    ids = np.array(ids, dtype=np.int32)
    ends = np.concatenate([[0], np.cumsum(ids == -2)])
    rows, cols = [], []
    for d in range(1, WINDOW + 1):
        a, b = ids[:-d], ids[d:]
        ok = (a >= 0) & (b >= 0) & (ends[d:len(ids)] == ends[1:len(ids) - d + 1])
        rows += [a[ok], b[ok]]
        cols += [b[ok], a[ok]]
    n = len(vocab)
    m = sp.coo_matrix((np.ones(sum(map(len, rows)), np.float32),
                       (np.concatenate(rows), np.concatenate(cols))), shape=(n, n)).tocsr().tocoo()
    total = m.data.sum()
    rs = np.asarray(m.tocsr().sum(axis=1)).ravel()
    cs = np.asarray(m.tocsr().sum(axis=0)).ravel() ** 0.75
    pmi = np.log(m.data / total) - np.log(rs[m.row] / total) - np.log(cs[m.col] / cs.sum())
    keep = pmi > 0
    p = sp.coo_matrix((pmi[keep].astype(np.float32), (m.row[keep], m.col[keep])), shape=(n, n)).tocsr()
    u, s, _ = svds(p, k=DIMS)
    w = u * np.sqrt(s)
    return vocab, w / (np.linalg.norm(w, axis=1, keepdims=True) + 1e-9)


def table(path):
    import numpy as np
    vocab, w = vectors(path)
    order = sorted(range(len(vocab)), key=lambda i: vocab[i].encode())
    entries, vecs, strings = bytearray(), bytearray(), bytearray()
    for i in order:
        v = w[i]
        q = np.clip(np.round(v * 127 / (np.abs(v).max() or 1.0)), -127, 127).astype(np.int8)
        entries += struct.pack("<IIf", len(strings), 0, float(np.linalg.norm(q.astype(np.float32))) or 1.0)
        vecs += q.tobytes()
        strings += vocab[i].encode() + b"\0"
    body = bytes(entries) + bytes(vecs) + bytes(strings)
    head = b"TGWV" + struct.pack("<IIIII", 1, len(vocab), DIMS, len(strings), fnv1a(body))
    sys.stdout.buffer.write(head + body)
    print("%d stems, %d bytes" % (len(vocab), len(head) + len(body)), file=sys.stderr)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "corpus":
        corpus(*sys.argv[2:])
    elif len(sys.argv) == 3 and sys.argv[1] == "table":
        table(sys.argv[2])
    else:
        sys.exit(__doc__)
