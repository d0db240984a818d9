#!/usr/bin/env python3
"""Loopback server for a page corpus, used by test/bench/content.sh.

Serves the pages of a corpus directory (NNN.html, NNN.txt, manifest.tsv;
see content.sh) on 127.0.0.1 the way the sites served them: each NNN.html
with the Content-Type the manifest's http_content_type column gives
("text/html" when the column or the manifest is missing), so that
web_fetch() meets the same header charsets the pages were written for.
The bytes are served as they are.  Python 3 standard library only; the
HTTP plumbing and the command line are shared with test/fixture/server.py.

Usage:
    python3 test/bench/corpus_server.py --port-file FILE --corpus DIR

Routes (GET and HEAD):
    /NNN.html       the page
    anything else   404
"""

import csv
import os
import sys

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixture"))
from server import HTTPError, QuietHandler, compile_routes, serve  # noqa: E402


def content_types(corpus):
    """Page id -> Content-Type, from manifest.tsv if there is one."""
    path = os.path.join(corpus, "manifest.tsv")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8", newline="") as f:
        return {row["id"]: row.get("http_content_type") or "text/html"
                for row in csv.DictReader(f, delimiter="\t")}


class CorpusHandler(QuietHandler):
    corpus = None
    types = {}

    def page(self, page_id):
        path = os.path.join(self.corpus, page_id + ".html")
        if not os.path.isfile(path):
            raise HTTPError(404, "not found")
        with open(path, "rb") as f:
            body = f.read()
        self.reply(200, body, self.types.get(page_id, "text/html"))

    routes = compile_routes((r"/(\d+)\.html", page))


def main():
    argv = sys.argv[1:]
    if "--corpus" not in argv or argv.index("--corpus") + 1 >= len(argv):
        sys.exit("usage: corpus_server.py --port-file FILE --corpus DIR")
    i = argv.index("--corpus")
    CorpusHandler.corpus = argv[i + 1]
    CorpusHandler.types = content_types(CorpusHandler.corpus)
    del argv[i:i + 2]
    return serve(CorpusHandler, "Loopback server for a page corpus.", argv)


if __name__ == "__main__":
    sys.exit(main())
