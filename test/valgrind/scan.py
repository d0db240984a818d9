#!/usr/bin/env python3
"""Read the valgrind logs of `make valgrind` and judge them.

Usage: scan.py ROOT LOGDIR

Every log (one per process) is split into its records: memory errors,
definite leaks and fatal signals, each with its stack, and the suppression
valgrind wrote for it.  A record is the extension's when a frame of its
stack is in ROOT/src/**/*.c or in queryclaw_ext.so; a fatal signal (a crash)
always counts.  Prints a summary, every record of
ours in full (with its suppression, should one be a false positive worth
adding to test/valgrind/queryclaw.supp), and one line per other record.
Exits 1 when any record is ours, 0 otherwise.
"""

import os
import re
import sys

PREFIX = re.compile(r"^==\d+== ?")
FRAME = re.compile(r"^\s+(at|by) 0x")
ADDRESS = re.compile(r"0x[0-9A-Fa-f]+:?")
SOURCE = re.compile(r"\(([^():]*/)?src/(?:[a-z_]+/)?([a-z_]+)\.c:\d+\)")


def records(path):
    """Yield (lines, suppression_lines) for each error record in a log.
    Records are separated by blank lines; the suppression valgrind writes
    for a record comes right after it."""
    record, block, supp, in_supp = None, [], [], False
    with open(path, errors="replace") as log:
        for raw in log:
            line = PREFIX.sub("", raw.rstrip("\n"))
            if in_supp:
                supp.append(line)
                if line == "}":
                    in_supp = False
                    if record is not None:
                        yield record, supp
                        record = None
                continue
            if line == "{":
                in_supp, supp = True, [line]
            elif line == "":
                if any(FRAME.match(l) for l in block):
                    if record is not None:
                        yield record, []
                    record = block
                block = []
            else:
                block.append(line)
    if any(FRAME.match(l) for l in block):
        if record is not None:
            yield record, []
        record = block
    if record is not None:
        yield record, []


def is_ours(block, sources):
    # a process killed by a signal (a crash) counts, wherever it happened
    if block[0].startswith("Process terminating with default action of signal"):
        return True
    for line in block:
        if not FRAME.match(line):
            continue
        if "queryclaw_ext.so" in line:
            return True
        match = SOURCE.search(line)
        if match and match.group(2) in sources:
            return True
    return False


def main():
    root, logdir = sys.argv[1], sys.argv[2]
    sources = {name[:-2] for name in os.listdir(os.path.join(root, "src")) if name.endswith(".c")}
    logs = sorted(name for name in os.listdir(logdir) if name.endswith(".log"))
    ours, others = [], []
    seen = set()
    for name in logs:
        for block, supp in records(os.path.join(logdir, name)):
            # the same record from many backends is one finding
            key = tuple(ADDRESS.sub("", l) for l in block if FRAME.match(l))
            if key in seen:
                continue
            seen.add(key)
            (ours if is_ours(block, sources) else others).append((name, block, supp))

    print(f"valgrind: {len(logs)} process logs; {len(ours) + len(others)} distinct "
          f"error or definite-leak records, {len(ours)} through the extension's code")
    for name, block, supp in ours:
        print(f"\n-- {name}")
        print("\n".join(block + supp))
    if others:
        print("\nrecords wholly inside PostgreSQL or a library (not counted):")
        for name, block, _ in others:
            frames = [l.strip() for l in block if FRAME.match(l)][:3]
            print(f"  {name}: {block[0]} | " + " | ".join(frames))
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main())
