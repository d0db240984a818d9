#!/usr/bin/env python3
"""test/demo/check.py: `make demo` as a new user runs it, checked.

Runs the demo (test/demo.sh) and reads what it prints: it must end well,
print no error, show each of its steps, and every step that shows a
table must show rows in it (an empty audit table, say, means the step
looked before the rows were there).  Prints "ok"/"not ok" lines and
"N passed, N failed"; .ci/run runs it once.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STEPS = ["1", "2", "3", "4", "5", "6", "6a", "6b", "6c", "7", "7a", "8", "9"]

results = []


def check(name, good, why=""):
    results.append(good)
    print(("ok - %s" % name) if good else ("not ok - %s%s" % (name, ": " + why if why else "")))


def tables(text):
    """The data rows of each psql table in text (header, ---- line, rows up to a blank line)."""
    lines = text.splitlines()
    found = []
    for i, line in enumerate(lines):
        if i > 0 and re.match(r"^-+(\+-+)*$", line):
            rows = []
            for row in lines[i + 1:]:
                if not row.strip() or row.startswith("("):
                    break
                rows.append(row)
            found.append(rows)
    return found


def main():
    run = subprocess.run(["bash", os.path.join(ROOT, "test", "demo.sh")], cwd=ROOT,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    out = run.stdout
    sys.stdout.write(out)
    check("make demo ends well", run.returncode == 0, "exit status %d" % run.returncode)
    errors = [l for l in out.splitlines() if re.search(r"\b(ERROR|FATAL|PANIC):", l)]
    check("make demo prints no error", not errors, errors[0] if errors else "")
    parts = re.split(r"^== (\w+)\. .*$", out, flags=re.M)
    shown = dict(zip(parts[1::2], parts[2::2]))
    for step in STEPS:
        body = shown.get(step)
        if body is None:
            check("step %s is shown" % step, False, "not in the output")
            continue
        empty = [t for t in tables(body) if not t]
        check("step %s is shown, each of its tables with rows" % step, not empty,
              "%d empty table(s)" % len(empty))
    print("%d passed, %d failed" % (results.count(True), results.count(False)))
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
