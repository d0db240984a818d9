#!/usr/bin/env python3
"""Bag-of-words scores of extracted text against a corpus's ground truth.

Used by test/bench/content.sh.  The metric is the one of the WCXB
benchmark: a text's tokens are the runs of word characters (Python's \\w,
Unicode-aware) in its lower-cased form, counted as a multiset; for each
page, precision = |output & truth| / |output|, recall = |output & truth| /
|truth| and F1 their harmonic mean; a corpus figure is the plain mean over
pages.  An empty output scores 0 (1 when the truth is empty too).

Usage:
    python3 bow.py CORPUS OUTDIR FORMAT... [--speed FILE] [--pages]

OUTDIR/FORMAT/NNN.out holds each format's output for page NNN; --speed
names a file of "format<TAB>MB/s" lines to show alongside; --pages also
prints every page's figures.
"""

import argparse
import csv
import os
import re
import signal
import statistics
from collections import Counter

WORD = re.compile(r"\w+")


def tokens(text):
    return Counter(WORD.findall(text.lower()))


def score(output, truth):
    """(precision, recall, f1) of one page."""
    out, ref = tokens(output), tokens(truth)
    n_out, n_ref = sum(out.values()), sum(ref.values())
    if n_ref == 0:
        return (1.0, 1.0, 1.0) if n_out == 0 else (0.0, 0.0, 0.0)
    if n_out == 0:
        return (0.0, 0.0, 0.0)
    common = sum((out & ref).values())
    precision, recall = common / n_out, common / n_ref
    f1 = 2 * precision * recall / (precision + recall) if common else 0.0
    return (precision, recall, f1)


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


def page_types(corpus):
    path = os.path.join(corpus, "manifest.tsv")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8", newline="") as f:
        return {row["id"]: row.get("page_type", "?") for row in csv.DictReader(f, delimiter="\t")}


def means(rows):
    return tuple(statistics.mean(r[i] for r in rows) for i in (2, 0, 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("corpus")
    ap.add_argument("outdir")
    ap.add_argument("formats", nargs="+")
    ap.add_argument("--speed")
    ap.add_argument("--pages", action="store_true")
    args = ap.parse_args()

    ids = sorted(name[:-4] for name in os.listdir(args.corpus)
                 if re.fullmatch(r"\d+\.txt", name))
    types = page_types(args.corpus)
    speed = {}
    if args.speed and os.path.exists(args.speed):
        with open(args.speed) as f:
            speed = dict(line.rstrip("\n").split("\t") for line in f if "\t" in line)

    scores = {}
    for fmt in args.formats:
        scores[fmt] = {i: score(read(os.path.join(args.outdir, fmt, i + ".out")),
                                read(os.path.join(args.corpus, i + ".txt")))
                       for i in ids}

    if args.pages:
        print("page  type           " + "".join(f"{fmt + ' P/R/F1':>22}" for fmt in args.formats))
        for i in ids:
            cells = "".join("{:>8.3f}{:>7.3f}{:>7.3f}".format(*scores[fmt][i]) for fmt in args.formats)
            print(f"{i:<5} {types.get(i, '?'):<14} {cells}")
        print()

    print(f"{len(ids)} pages; bag-of-words means over pages")
    print(f"{'format':<10} {'F1':>7} {'precision':>10} {'recall':>8} {'MB/s':>8}")
    for fmt in args.formats:
        f1, p, r = means(list(scores[fmt].values()))
        print(f"{fmt:<10} {f1:7.4f} {p:10.4f} {r:8.4f} {speed.get(fmt, '-'):>8}")

    print_groups("F1 by page type", "type", ids, lambda i: types.get(i, "?"), scores, args.formats)
    # rules set on one half of a corpus should hold on the other
    if all(i.isdigit() for i in ids):
        print_groups("F1 by half (page number)", "half", ids,
                     lambda i: "odd" if int(i) % 2 else "even", scores, args.formats)


def print_groups(title, heading, ids, group_of, scores, formats):
    """Mean F1 of each format over the pages of each group, if there are two or more."""
    groups = sorted(set(group_of(i) for i in ids))
    if len(groups) < 2:
        return
    print()
    print(title)
    print(f"{heading:<14} {'n':>3}" + "".join(f"{fmt:>10}" for fmt in formats))
    for g in groups:
        sub = [i for i in ids if group_of(i) == g]
        cells = "".join(f"{means([scores[fmt][i] for i in sub])[0]:10.4f}" for fmt in formats)
        print(f"{g:<14} {len(sub):>3}{cells}")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    main()
