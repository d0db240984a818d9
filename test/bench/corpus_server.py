#!/usr/bin/env python3
"""Loopback server for a page corpus, used by test/bench/content.sh.

Serves the pages of a corpus directory (NNN.html, NNN.txt, manifest.tsv;
see content.sh) on 127.0.0.1 the way the sites served them: each NNN.html
with the Content-Type the manifest's http_content_type column gives
("text/html" when the column or the manifest is missing), so that
web_fetch() meets the same header charsets the pages were written for.
The bytes are served as they are.  Python 3 standard library only; the
HTTP plumbing and the command line are shared with test/fixture/server.py.

The same page can also be served in another charset, to check that what a
page becomes does not depend on the charset it travels in: the page is
decoded with the manifest's file_encoding, its own charset declarations
are removed, and it is encoded into the charset asked for (characters that
charset cannot hold become &#N; references, which mean the same), with a
<meta charset> naming it near the top of the page and no charset in the
Content-Type, so that the <meta> alone decides (or the BOM, for utf-16).

Usage:
    python3 test/bench/corpus_server.py --port-file FILE --corpus DIR

Routes (GET and HEAD):
    /NNN.html           the page
    /as/CHARSET/NNN.html  the page re-encoded into CHARSET (a Python codec
                        name); 404 when the manifest gives no file_encoding
    anything else       404
"""

import csv
import os
import re
import sys

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixture"))
from server import HTTPError, QuietHandler, compile_routes, serve  # noqa: E402


def manifest(corpus):
    """Page id -> manifest row (a dict), from manifest.tsv if there is one."""
    path = os.path.join(corpus, "manifest.tsv")
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8", newline="") as f:
        return {row["id"]: row for row in csv.DictReader(f, delimiter="\t")}


# What declares a charset inside a page: <meta charset=...>, <meta
# http-equiv="Content-Type" content="...; charset=...">, and the XML
# declaration's encoding
DECLARATION = re.compile(r"<meta\b[^>]*charset[^>]*>|<\?xml[^>]*\?>", re.I)
# Where the new <meta charset> goes: after <head> when that is near the top
# (a browser looks for it in the first 1024 bytes), else after the doctype
HEAD = re.compile(r"<head\b[^>]*>", re.I)
DOCTYPE = re.compile(r"\A\s*<!doctype[^>]*>", re.I)


# The Python codec to encode into a charset with, where the one of the same
# name is not the charset browsers decode: Python's big5 puts Cyrillic where
# Big5-HKSCS, which the WHATWG Encoding Standard follows, has kana
ENCODERS = {"big5": "big5hkscs"}


def recode(page, file_encoding, charset):
    """The page's bytes, re-encoded from file_encoding into charset."""
    source = "utf-8-sig" if file_encoding.startswith("utf-8") else file_encoding.split()[0]
    text = DECLARATION.sub("", page.decode(source))
    head = HEAD.search(text, 0, 900) or DOCTYPE.match(text)
    at = head.end() if head else 0
    text = text[:at] + '<meta charset="%s">' % charset + text[at:]
    return text.encode(ENCODERS.get(charset.lower(), charset), errors="xmlcharrefreplace")


class CorpusHandler(QuietHandler):
    corpus = None
    pages = {}

    def read_page(self, page_id):
        path = os.path.join(self.corpus, page_id + ".html")
        if not os.path.isfile(path):
            raise HTTPError(404, "not found")
        with open(path, "rb") as f:
            return f.read()

    def page(self, page_id):
        body = self.read_page(page_id)
        row = self.pages.get(page_id, {})
        self.reply(200, body, row.get("http_content_type") or "text/html")

    def page_as(self, charset, page_id):
        body = self.read_page(page_id)
        file_encoding = self.pages.get(page_id, {}).get("file_encoding")
        if not file_encoding:
            raise HTTPError(404, "no file_encoding for this page in manifest.tsv")
        try:
            body = recode(body, file_encoding, charset)
        except LookupError:
            raise HTTPError(404, "unknown charset")
        self.reply(200, body, "text/html")

    routes = compile_routes((r"/(\d+)\.html", page),
                            (r"/as/([\w-]+)/(\d+)\.html", page_as))


def main():
    argv = sys.argv[1:]
    if "--corpus" not in argv or argv.index("--corpus") + 1 >= len(argv):
        sys.exit("usage: corpus_server.py --port-file FILE --corpus DIR")
    i = argv.index("--corpus")
    CorpusHandler.corpus = argv[i + 1]
    CorpusHandler.pages = manifest(CorpusHandler.corpus)
    del argv[i:i + 2]
    return serve(CorpusHandler, "Loopback server for a page corpus.", argv)


if __name__ == "__main__":
    sys.exit(main())
