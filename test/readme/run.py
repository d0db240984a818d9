#!/usr/bin/env python3
"""Run the SQL examples of the README and docs/ as written
(test/readme/run.sh calls this).

    run.py conf README              print the settings of the README's
                                    postgresql.conf block
    run.py run FILE... -- PSQL...   run every ```sql block of the files
                                    with the psql command given
                                    (connection included)

Blocks run in the order a new user meets them: those of the README's
installation section first, then every other one, file by file in the
order given and in each file's order, each in a psql session of its own,
stopping at its first error.  Once a block has called
pg_reload_conf(), the next waits until a new session sees the reloaded
configuration.  A JSON value shown in a comment right under a statement
("-- {...}", over as many comment lines as it takes) must equal what the
statement returns.  Prints "ok - ..." or "not ok - ..." per block, and per
result checked, for test/run.sh to count.
"""

import json
import os
import re
import subprocess
import sys
import time

INSTALL_SECTION = "## Installing into your own server"


def blocks(readme):
    """(line number, language, text, section) of every fenced block."""
    found, section, fence = [], None, None
    for number, line in enumerate(open(readme, encoding="utf-8").read().split("\n"), 1):
        if fence is None:
            if line.startswith("## "):
                section = line
            if line.startswith("```"):
                fence = (number, line[3:].strip(), [])
        elif line.startswith("```"):
            found.append((fence[0], fence[1], "\n".join(fence[2]) + "\n", section))
            fence = None
        else:
            fence[2].append(line)
    return found


def conf_block(readme):
    for _, lang, text, _ in blocks(readme):
        if lang == "" and text.startswith("# postgresql.conf"):
            return text
    sys.exit("README.md has no postgresql.conf block")


def shown_results(text):
    """(statement, JSON) pairs: a statement followed by a commented JSON value."""
    lines = text.split("\n")
    pairs = []
    for i, line in enumerate(lines):
        if not re.match(r"-- [\[{]", line) or i == 0 or lines[i - 1].startswith("--"):
            continue
        start = i
        while start > 0 and lines[start - 1].strip() and not lines[start - 1].startswith("--") \
                and (start == i or not lines[start - 1].rstrip().endswith(";")):
            start -= 1
        statement = "\n".join(lines[start:i]).strip().rstrip(";")
        comment, value = "", None
        for more in lines[i:]:
            if not more.startswith("-- "):
                break
            comment += more[3:] + "\n"
            try:
                value = json.loads(comment)
                break
            except ValueError:
                continue
        pairs.append((statement, value, comment))
    return pairs


def psql(cmd, *args, sql=None):
    return subprocess.run(cmd + ["-X", "-v", "ON_ERROR_STOP=1", *args], input=sql,
                          capture_output=True, text=True, timeout=180)


def conf_load_time(cmd):
    return psql(cmd, "-At", "-c", "SELECT pg_conf_load_time()").stdout.strip()


def run(files, cmd):
    failures = 0
    found = [(f, *b) for f in files for b in blocks(f) if b[1] == "sql"]
    ordered = [b for b in found if b[4] == INSTALL_SECTION] + [b for b in found if b[4] != INSTALL_SECTION]
    for path, number, _, text, _ in ordered:
        title = f"{os.path.basename(path)} line {number}: {text.split(chr(10), 1)[0][:60]}"
        before = conf_load_time(cmd) if "pg_reload_conf()" in text else None
        try:
            result = psql(cmd, "-q", "-f", "-", sql=text)
            errors = result.stderr if result.returncode else ""
        except subprocess.TimeoutExpired:
            errors = "did not finish in 180 s"
        if errors:
            failures += 1
            print(f"not ok - {title}\n" + "".join("#   " + e + "\n" for e in errors.splitlines()))
        else:
            print(f"ok - {title}")
        if before is not None:
            for _ in range(500):
                if conf_load_time(cmd) != before:
                    break
                time.sleep(0.02)
        for statement, value, comment in shown_results(text):
            got = psql(cmd, "-At", "-c", statement)
            shown = f"{title}: the result shown of {statement.splitlines()[0][:50]}"
            try:
                ok = value is not None and json.loads(got.stdout) == value
            except ValueError:
                ok = False
            if ok:
                print(f"ok - {shown}")
            else:
                failures += 1
                print(f"not ok - {shown}\n#   shown: {comment.strip()}\n#   got:   "
                      f"{(got.stdout or got.stderr).strip()}")
    return 1 if failures else 0


def main(argv):
    if len(argv) >= 3 and argv[1] == "conf":
        print(conf_block(argv[2]), end="")
        return 0
    if len(argv) >= 5 and argv[1] == "run" and "--" in argv[3:]:
        split = argv.index("--")
        return run(argv[2:split], argv[split + 1:])
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
