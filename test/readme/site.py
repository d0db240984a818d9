#!/usr/bin/env python3
"""The web of the README's examples, on loopback, for test/readme/run.sh.

The README's SQL examples name hosts under example.com; in the test's
network namespace the DNS fixture (test/fixture/dns.py) answers them with
127.0.0.1, where this server listens on ports 80 (HTTP) and 443 (HTTPS,
with a certificate for example.com and *.example.com from the test CA),
so the examples run as written.  It answers by Host header:

    example.com /                   a small page
    example.com /missing            404
    news.example.com /2026/<slug>   an article with its metadata (title,
                                    author, publication date)
    api.example.com GET /v1/item/N  {"id": N, "name": ...}
    api.example.com POST /v1/items  201 {"id": 101, "name": <the body's name>}
    api.example.com /a, /b          {"path", "method"}, GET or POST
    api.example.com /v1/products/N  a product as JSON
    shop.example.com /products/N    a product page
    <company>.example.com /         a company's home page, saying where it is
    bakery.example.com /            opening hours
    mcp.example.com POST /mcp       an MCP server (test/fixture/mcp_fixture.py)
    anything else                   404

Usage:
    python3 test/readme/site.py --port-file FILE --port 80 \\
        --tls-port-file FILE --tls-port 443 --tls-cert PEM --tls-key KEY

Deterministic: no dates, no randomness.  Python 3 standard library only.
"""

import json
import os
import sys
from html import escape

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixture"))
from server import ALL_METHODS, HTML, JSON, HTTPError, QuietHandler, compile_routes, serve  # noqa: E402
import mcp_fixture  # noqa: E402

# host label, name, what it does, city, country
COMPANIES = {
    "acme": ("Acme Optics", "Lenses for microscopes and telescopes", "Lyon", "France"),
    "globex": ("Globex Cork", "Cork stoppers and floor tiles", "Porto", "Portugal"),
    "initech": ("Initech", "Payroll software for hospitals", "Austin", "United States"),
}

ARTICLES = {
    "story": ("Harbour reopens after storm", "Ana Lima", "2026-03-14T09:30:00Z",
              "The harbour reopened on Saturday after a week of repairs to the sea wall. "
              "Fishing boats left at dawn, and the ferry to the islands runs again from Monday."),
    "another": ("New tram line opens", "Jon Berg", "2026-04-02T07:00:00Z",
                "The city's fourth tram line opened this morning, linking the station to the "
                "university in twelve minutes. Trams run every six minutes at peak hours."),
}

PRODUCTS = {
    "1": ("Blue kettle", "1.7 litres, boils in three minutes.", 39.0),
    "2": ("Oak tray", "Solid oak, oiled, 40 by 30 cm.", 24.5),
}


def page(title, body, head=""):
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{escape(title)}</title>{head}</head><body>"
            f"<nav><a href=\"/\">Home</a> <a href=\"/about\">About</a></nav>"
            f"{body}<footer>© Example</footer></body></html>")


class Site(QuietHandler):
    server_version = "readme-site/1.0"

    def host(self):
        return self.headers.get("Host", "").split(":")[0].lower()

    def handle_any(self):
        host, path = self.host(), self.url_path
        label = host[:-len(".example.com")] if host.endswith(".example.com") else None
        if host == "example.com" and path == "/":
            return self.reply(200, page("Example Domain", "<main><h1>Example Domain</h1><p>This domain "
                                        "is for use in examples in documents.</p></main>"), HTML)
        if label == "news" and path.startswith("/2026/") and path[6:] in ARTICLES:
            return self.article(*ARTICLES[path[6:]])
        if label == "api":
            return self.api(path)
        if label == "mcp" and path == "/mcp" and self.command == "POST":
            return mcp_fixture.handle(self, "json")
        if label == "shop" and path.startswith("/products/") and path[10:] in PRODUCTS:
            name, text, price = PRODUCTS[path[10:]]
            return self.reply(200, page(name, f"<main><h1>{escape(name)}</h1><p>{escape(text)}</p>"
                                        f"<p>Price: {price:.2f} EUR</p></main>"), HTML)
        if label in COMPANIES and path == "/":
            name, what, city, country = COMPANIES[label]
            return self.reply(200, page(name, f"<header><h1>{escape(name)}</h1></header><main>"
                                        f"<p>{escape(what)} from {city}, {country}.</p></main>"), HTML)
        if label == "bakery" and path == "/":
            return self.reply(200, page("The Corner Bakery", "<main><h1>The Corner Bakery</h1>"
                                        "<h2>Opening hours</h2><ul><li>Monday to Friday: 7:00 to 18:00</li>"
                                        "<li>Saturday: 8:00 to 13:00</li><li>Sunday: closed</li></ul></main>"),
                              HTML)
        raise HTTPError(404, "not found")

    def article(self, title, author, published, text):
        head = (f"<meta property=\"og:title\" content=\"{escape(title)}\">"
                f"<meta name=\"author\" content=\"{escape(author)}\">"
                f"<meta property=\"article:published_time\" content=\"{published}\">"
                f"<meta name=\"description\" content=\"{escape(text.split('. ')[0])}.\">")
        body = (f"<main><article><h1>{escape(title)}</h1><p class=\"byline\">By {escape(author)}</p>"
                f"<p>{escape(text)}</p></article></main><aside><h2>Most read</h2><ul>"
                f"<li><a href=\"/2026/another\">New tram line opens</a></li></ul></aside>")
        self.reply(200, page(title, body, head), HTML)

    def api(self, path):
        parts = path.strip("/").split("/")
        if parts[:2] == ["v1", "item"] and len(parts) == 3 and parts[2].isdigit():
            return self.reply_json({"id": int(parts[2]), "name": f"Item {parts[2]}"})
        if path == "/v1/items" and self.command == "POST":
            try:
                name = json.loads(self.body or b"{}").get("name")
            except (ValueError, AttributeError):
                raise HTTPError(400, "the body must be a JSON object") from None
            return self.reply_json({"id": 101, "name": name}, 201)
        if path in ("/a", "/b"):
            return self.reply_json({"path": path, "method": self.command})
        if parts[:2] == ["v1", "products"] and len(parts) == 3 and parts[2] in PRODUCTS:
            name, text, price = PRODUCTS[parts[2]]
            return self.reply_json({"id": int(parts[2]), "name": name, "price": price})
        raise HTTPError(404, "not found")

    routes = compile_routes((r"/.*", handle_any, ALL_METHODS))


if __name__ == "__main__":
    sys.exit(serve(Site, "The web of the README's examples, for the queryclaw_ext tests."))
