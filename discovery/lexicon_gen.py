#!/usr/bin/env python3
"""lexicon_gen.py -- writes discovery/lexicon_data.c from WordNet 3.0.

    python3 discovery/lexicon_gen.py [--wordnet DIR] [--gloss N] [--flags MASK]
        [--senses N] [--all-words] > discovery/lexicon_data.c

Re-run it only to change what the table holds; the output is committed, so
neither a build nor toolgate needs WordNet (Debian: apt-get install
wordnet-base, whose files are in /usr/share/wordnet) or Python. It needs
libstemmer (the library toolgate links) through ctypes, because the table
is keyed by the stems search_tools compares.

What it extracts, for every single-word lemma of WordNet's nouns, verbs,
adjectives and adverbs (letters only, 3 or more) that has a sense in
WordNet's tagged corpus (the common words; --all-words: every one):
  - the first --gloss content words of the definition of its first sense
    in each part of speech (TG_LEX_GLOSS: search_tools' query side and the
    names' definitions use them);
  - the other single-word lemmas of its first N senses (WordNet orders a
    lemma's senses by how often they were tagged in its corpus, so the
    first is the common one), flagged by sense rank and part of speech;
    by default (--flags 130) only those of its first verb sense
    (TG_LEX_SYN1_VERB: a tool name's words are matched by them);
  - with --flags 64: the lemmas WordNet marks as derivationally related to
    it in those senses ("elevation" -> "elevate", "deletion" -> "delete").
Both ends are stemmed with Snowball's English stemmer; a pair whose stems
are equal is left out (the stemmer already joins it). Nothing here knows
a tool or a query of the eval.

WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved.
(Its licence, which allows use, copying and distribution with this notice:
see the header of lexicon_data.c.)
"""
import argparse
import ctypes
import ctypes.util
import re
import sys

POS = {"noun": "N", "verb": "V", "adj": "A", "adv": "A"}
# the flags of a pair, lexicon.h's TG_LEX_*
F = {"1N": 1, "1V": 2, "1A": 4, "kN": 8, "kV": 16, "kA": 32, "D": 64, "G": 128}
# gloss words that say nothing about a sense (discovery/index.c's stop words and a few more)
GLOSS_STOP = set("""a about all also an and any are as at be been by can could do does e eg etc for
from g has have here how i if in into is it its just let like me my need now of on or our out please
should so some than that the their them then there these they this those to up us via want was we were
what when where which who will with would you your not no other such especially something someone
usually often used being having one esp sometimes certain very more most made make own""".split())

LICENCE = """WordNet Release 3.0 This software and database is being provided to you, the
LICENSEE, by Princeton University under the following license. By obtaining,
using and/or copying this software and database, you agree that you have
read, understood, and will comply with these terms and conditions.:
Permission to use, copy, modify and distribute this software and database and
its documentation for any purpose and without fee or royalty is hereby
granted, provided that you agree to comply with the following copyright
notice and statements, including the disclaimer, and that the same appear on
ALL copies of the software, database and documentation, including
modifications that you make for internal use or for distribution.
WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved.
THIS SOFTWARE AND DATABASE IS PROVIDED "AS IS" AND PRINCETON UNIVERSITY MAKES
NO REPRESENTATIONS OR WARRANTIES, EXPRESS OR IMPLIED. BY WAY OF EXAMPLE, BUT
NOT LIMITATION, PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS OR WARRANTIES
OF MERCHANT- ABILITY OR FITNESS FOR ANY PARTICULAR PURPOSE OR THAT THE USE OF
THE LICENSED SOFTWARE, DATABASE OR DOCUMENTATION WILL NOT INFRINGE ANY THIRD
PARTY PATENTS, COPYRIGHTS, TRADEMARKS OR OTHER RIGHTS. The name of Princeton
University or Princeton may not be used in advertising or publicity
pertaining to distribution of the software and/or database. Title to
copyright in this software, database and any associated documentation shall
at all times remain with Princeton University and LICENSEE agrees to
preserve same."""


class Stemmer:
    def __init__(self):
        lib = ctypes.CDLL(ctypes.util.find_library("stemmer") or "libstemmer.so.0d")
        lib.sb_stemmer_new.restype = ctypes.c_void_p
        lib.sb_stemmer_new.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
        lib.sb_stemmer_stem.restype = ctypes.POINTER(ctypes.c_ubyte)
        lib.sb_stemmer_stem.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int]
        lib.sb_stemmer_length.argtypes = [ctypes.c_void_p]
        self.lib, self.st, self.memo = lib, lib.sb_stemmer_new(b"english", None), {}

    def __call__(self, w):
        if w not in self.memo:
            b = w.encode()
            r = self.lib.sb_stemmer_stem(self.st, b, len(b))
            n = self.lib.sb_stemmer_length(self.st)
            self.memo[w] = bytes(r[:n]).decode()
        return self.memo[w]


WORD = re.compile(r"^[a-z]{3,}$")


def clean(lemma):
    return re.sub(r"\(.*\)$", "", lemma).lower()


def gloss_words(gloss, n):
    """The first n content words of a gloss's definition (its examples, in
    quotes after a ';', left out)."""
    head = re.split(r';\s*"', gloss)[0]
    head = re.sub(r"\(.*?\)", " ", head)
    out = []
    for w in re.findall(r"[a-z]+", head.lower()):
        if len(w) >= 3 and w not in GLOSS_STOP and w not in out:
            out.append(w)
    return out[:n]


def read_data(path):
    """offset -> (words, [(symbol, offset, pos, src, dst)], gloss)"""
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith("  "):
                continue
            head, _, gloss = line.partition(" | ")
            t = head.split()
            off, wcnt = t[0], int(t[3], 16)
            words = [clean(t[4 + 2 * i]) for i in range(wcnt)]
            i = 4 + 2 * wcnt
            pcnt = int(t[i])
            ptrs = []
            for k in range(pcnt):
                sym, poff, ppos, st = t[i + 1 + 4 * k: i + 5 + 4 * k]
                ptrs.append((sym, poff, ppos, int(st[:2], 16), int(st[2:], 16)))
            out[off] = (words, ptrs, gloss.strip())
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--wordnet", default="/usr/share/wordnet")
    ap.add_argument("--senses", type=int, default=3)
    ap.add_argument("--flags", type=int, default=130, help="the kinds of pairs kept (TG_LEX_*)")
    ap.add_argument("--all-words", dest="tagged", action="store_false",
                    help="also the words with no sense in WordNet's tagged corpus (rare ones)")
    ap.add_argument("--gloss", type=int, default=4, help="content words of a first sense's gloss")
    a = ap.parse_args()
    stem = Stemmer()
    data = {}
    for name in POS:
        data[name] = read_data(f"{a.wordnet}/data.{name}")
    psyn = {"n": "noun", "v": "verb", "a": "adj", "s": "adj", "r": "adv"}
    pairs = {}  # (stem, stem) -> flags

    def add(k, v, flag):
        if flag & a.flags and WORD.match(k) and WORD.match(v):
            sk, sv = stem(k), stem(v)
            if sk != sv:
                pairs[(sk, sv)] = pairs.get((sk, sv), 0) | flag

    for name, letter in POS.items():
        with open(f"{a.wordnet}/index.{name}") as f:
            for line in f:
                if line.startswith("  "):
                    continue
                t = line.split()
                lemma = t[0]
                if not WORD.match(lemma):
                    continue
                pcnt = int(t[3])
                offs = t[6 + pcnt:]
                if a.tagged and int(t[5 + pcnt]) == 0:
                    continue  # no sense of it in WordNet's tagged corpus: a rare word
                for rank, off in enumerate(offs[: a.senses]):
                    words, ptrs, gloss = data[name][off]
                    if rank == 0:
                        for g in gloss_words(gloss, a.gloss):
                            add(lemma, g, F["G"])
                    kind = ("1" if rank == 0 else "k") + letter
                    for w in words:
                        if w != lemma:
                            add(lemma, w, F[kind])
                    me = words.index(lemma) + 1 if lemma in words else -1
                    for sym, poff, ppos, src, dst in ptrs:
                        if sym == "+" and src == me:
                            other = data[psyn[ppos]][poff][0][dst - 1]
                            add(lemma, other, F["D"])
    keys = sorted({k for k, _ in pairs})
    by = {k: [] for k in keys}
    for (k, v), fl in pairs.items():
        by[k].append((v, fl))
    strings = sorted({s for kv in pairs for s in kv})
    pos, blob = {}, []
    n = 0
    for s in strings:
        pos[s] = n
        blob.append(s)
        n += len(s) + 1
    assert n < 1 << 24, "a pair keeps 24 bits of offset"
    w = sys.stdout.write
    w("/* lexicon_data.c -- generated by discovery/lexicon_gen.py from WordNet 3.0\n"
      f" * (--senses {a.senses} --flags {a.flags} --gloss {a.gloss}"
      f"{'' if a.tagged else ' --all-words'}); do not edit, re-run it.\n *\n")
    for line in LICENCE.splitlines():
        w(" * " + line + "\n")
    w(" */\n#include \"discovery/lexicon.h\"\n\n")
    w(f"const size_t tg_lex_nwords = {len(keys)};\n")
    w(f"const size_t tg_lex_npairs = {len(pairs)};\n\n")
    w("/* every stem, NUL-ended, sorted */\nconst char tg_lex_strings[] =\n")
    line = '    "'
    for s in blob:
        piece = s + "\\0"
        if len(line) + len(piece) > 96:
            w(line + '"\n')
            line = '    "'
        line += piece
    w(line + '";\n\n')
    w("/* per key (sorted): its offset in tg_lex_strings and its first pair */\n"
      "const tg_lex_word tg_lex_words[] = {\n")
    first = 0
    row = []
    for k in keys:
        row.append(f"{{{pos[k]}, {first}}},")
        first += len(by[k])
        if len(row) == 6:
            w("    " + " ".join(row) + "\n")
            row = []
    w("    " + " ".join(row) + "\n" if row else "")
    w("};\n\n/* per pair: the related stem's offset << 8 | its TG_LEX_* kinds */\n"
      "const uint32_t tg_lex_pairs[] = {\n")
    row = []
    for k in keys:
        for v, fl in sorted(by[k], key=lambda x: (-(x[1] & 7), x[0])):
            row.append(f"{pos[v] << 8 | fl}u,")
            if len(row) == 8:
                w("    " + " ".join(row) + "\n")
                row = []
    w(("    " + " ".join(row) + "\n" if row else "") + "};\n")
    print(f"lexicon_gen: {len(keys)} words, {len(pairs)} pairs, {n} bytes of stems",
          file=sys.stderr)


if __name__ == "__main__":
    main()
