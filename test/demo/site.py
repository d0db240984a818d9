#!/usr/bin/env python3
"""Sample company web site for the queryclaw_ext demo (`make demo`).

Serves a small, fully fictional set of company homepages and a JSON API on
127.0.0.1, so that test/demo/demo.sql can enrich a table from "the web"
without leaving the machine.  Python 3 standard library only; the HTTP
plumbing (and the command line) is shared with test/fixture/server.py.

Usage:
    python3 test/demo/site.py --port-file FILE [--host 127.0.0.1] [--verbose]

Routes (GET and HEAD):
    /companies/<slug>       the company's homepage (HTML, UTF-8)
    /api/companies/<slug>   the company as JSON: name, slug, city, country,
                            founded, employees, industry, products
    /api/companies          JSON list of all slugs, sorted
    /api/flaky/<name>       503 the first time a name is asked for, then a
                            JSON object naming it: a request retried once
    /api/down               always 503: a request whose retries run out
    anything else           404

One slug, ghost-systems, is listed by /api/companies but answers 404 on both
company routes, so the demo shows how a failed row is handled.  Output is
deterministic: no randomness, no dates.
"""

import os
import sys
from html import escape

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixture"))
from server import HTML, HTTPError, QuietHandler, compile_routes, serve  # noqa: E402

# name, slug, city, country, founded, employees, industry, description, products
COMPANIES = [
    ("Acorn Analytics", "acorn-analytics", "Portland", "United States", 2011, 140,
     "Data analytics",
     "Acorn Analytics helps mid-sized retailers turn point-of-sale data into "
     "weekly forecasts. Its dashboards are used in more than 900 stores.",
     ["Acorn Insight", "Acorn Pipelines", "Acorn Forecast"]),
    ("Bergfeld Präzision", "bergfeld-praezision", "Zürich", "Switzerland", 1987, 420,
     "Precision engineering",
     "Bergfeld Präzision machines spindles and measuring instruments to "
     "tolerances of a micrometre. The family-run firm still assembles every "
     "instrument by hand.",
     ["Spindle S-200", "Micrometer M7", "CalibraSuite"]),
    ("Colibri Torrefação", "colibri-torrefacao", "São Paulo", "Brazil", 2004, 85,
     "Food and beverage",
     "Colibri roasts single-origin coffee sourced from small farms in Minas "
     "Gerais. It supplies cafés across Brazil and ships beans to twelve countries.",
     ["Colibri Espresso", "Serra Azul Filter", "Cold Brew Kit"]),
    ("Wawel Software", "wawel-software", "Kraków", "Poland", 2013, 230,
     "Software",
     "Wawel Software builds scheduling and payroll tools for hospitals. Its "
     "products handle rosters for more than 40,000 nurses and doctors.",
     ["ShiftPlan", "PayDesk", "OnCall Mobile"]),
    ("Lumière Optique", "lumiere-optique", "Lyon", "France", 1962, 610,
     "Optics",
     "Lumière Optique grinds lenses for microscopes, telescopes and "
     "industrial cameras. Its research lab works with three universities.",
     ["Lentille Pro", "Astra 80 Objective", "ClearCoat"]),
    ("Harbor & Finch", "harbor-finch", "Boston", "United States", 2016, 48,
     "Legal technology",
     "Harbor & Finch makes contract review software for small law firms. "
     "Clauses are compared against a library of annotated precedents.",
     ["ClauseCheck", "Finch Redline", "Docket Sync"]),
    ("Kestrel Drones", "kestrel-drones", "Bristol", "United Kingdom", 2018, 64,
     "Aerospace",
     "Kestrel Drones designs fixed-wing survey drones for farms and "
     "coastlines. A single flight can map 400 hectares.",
     ["Kestrel K2", "Hover Dock", "FieldMap"]),
    ("Nordlys Energi", "nordlys-energi", "Tromsø", "Norway", 2009, 310,
     "Renewable energy",
     "Nordlys Energi operates small hydro and wind plants above the Arctic "
     "Circle. It sells power to local grids and to two data centres.",
     ["Nordlys Hydro", "Polar Wind", "GridBalance"]),
    ("Tidewater Logistics", "tidewater-logistics", "Rotterdam", "Netherlands", 1995, 1250,
     "Logistics",
     "Tidewater Logistics moves containers between the port and inland "
     "terminals by barge and rail. Its planning software is licensed to other "
     "carriers.",
     ["BargeLink", "Terminal Planner", "CargoTrace"]),
    ("Sakura Circuitworks", "sakura-circuitworks", "Osaka", "Japan", 1979, 2300,
     "Electronics",
     "Sakura Circuitworks manufactures printed circuit boards for medical "
     "and automotive devices. Every board is tested on an automated line.",
     ["SC-Flex", "SC-Rigid 12", "ThermalGuard"]),
    ("Mesa Verde Farms", "mesa-verde-farms", "Tucson", "United States", 1958, 175,
     "Agriculture",
     "Mesa Verde Farms grows pecans and desert-adapted vegetables with drip "
     "irrigation. It sells to grocers across the Southwest.",
     ["Desert Pecans", "Tepary Beans", "Farm Box"]),
    ("Bluefjord Capital", "bluefjord-capital", "Copenhagen", "Denmark", 2002, 390,
     "Financial services",
     "Bluefjord Capital manages pension savings for Nordic cooperatives. "
     "Its funds invest only in listed companies with published climate plans.",
     ["Fjord Pension", "Green Bond Fund", "Saver App"]),
    ("Pampas Textiles", "pampas-textiles", "Córdoba", "Argentina", 1971, 520,
     "Textiles",
     "Pampas Textiles spins and weaves wool from Patagonian sheep. Its "
     "fabrics go into coats, blankets and upholstery.",
     ["Merino Loom", "Andes Blanket", "Estancia Tweed"]),
    ("Kiwi Kinetics", "kiwi-kinetics", "Wellington", "New Zealand", 2014, 37,
     "Sports technology",
     "Kiwi Kinetics makes wearable sensors that measure rowing and paddling "
     "technique. Coaches review every stroke on a tablet.",
     ["StrokeSense", "Coach View", "Paddle Pod"]),
    ("Saffron Health", "saffron-health", "Bengaluru", "India", 2015, 880,
     "Healthcare software",
     "Saffron Health runs appointment and records software for outpatient "
     "clinics. More than 3,000 clinics use it in six languages.",
     ["Saffron Clinic", "MedRecord", "Saffron Pay"]),
    ("Ironbark Tools", "ironbark-tools", "Perth", "Australia", 1990, 460,
     "Industrial equipment",
     "Ironbark Tools builds drilling and cutting equipment for mines. Its "
     "workshops refurbish worn drill heads for a second life.",
     ["Ironbark Drill 9", "RockSaw", "Refit Service"]),
    ("Quetzal Payments", "quetzal-payments", "Guadalajara", "Mexico", 2017, 150,
     "Fintech",
     "Quetzal Payments lets market stalls and small shops accept card and "
     "phone payments. Settlement happens the same day.",
     ["Quetzal Reader", "Cobro Link", "Quetzal Ledger"]),
    ("Birchline Robotics", "birchline-robotics", "Montréal", "Canada", 2012, 205,
     "Robotics",
     "Birchline Robotics designs collaborative robot arms for food packaging. "
     "The arms can be retrained by line workers in an afternoon.",
     ["Birch Arm 6", "TeachPad", "SafeZone Sensor"]),
    ("Compass Rose Mapping", "compass-rose-mapping", "Dublin", "Ireland", 2008, 95,
     "Geospatial",
     "Compass Rose Mapping produces street-level maps for councils and "
     "utilities. Its surveyors cover every road in Ireland twice a year.",
     ["RoseMap", "Asset Layer", "Survey Van Kit"]),
    ("Vesuvio Ceramiche", "vesuvio-ceramiche", "Napoli", "Italy", 1948, 130,
     "Ceramics",
     "Vesuvio Ceramiche fires hand-painted tiles in a kiln that has burned "
     "since 1948. Architects commission its glazes for restorations.",
     ["Majolica Tiles", "Lava Glaze", "Custom Murals"]),
    ("Alpenglow Outdoor", "alpenglow-outdoor", "Innsbruck", "Austria", 1999, 260,
     "Outdoor equipment",
     "Alpenglow Outdoor makes ropes, harnesses and tents for alpine climbing. "
     "Every design is tested on the Nordkette before release.",
     ["Summit Rope 9.5", "Grat Harness", "Biwak Tent"]),
    ("Baobab Solar", "baobab-solar", "Nairobi", "Kenya", 2016, 340,
     "Renewable energy",
     "Baobab Solar installs solar home systems paid for in small mobile "
     "instalments. Over 120,000 homes have switched from kerosene.",
     ["Baobab Home Kit", "SunPay", "Baobab Fridge"]),
    ("Lindqvist Akustik", "lindqvist-akustik", "Göteborg", "Sweden", 1983, 190,
     "Audio equipment",
     "Lindqvist Akustik builds studio monitors and acoustic panels. Its "
     "speakers are found in broadcast studios across Scandinavia.",
     ["LA-8 Monitor", "Tyst Panel", "Room Tuner"]),
    ("Cedar & Stone Arquitetos", "cedar-stone", "Lisboa", "Portugal", 2006, 72,
     "Architecture",
     "Cedar & Stone designs timber-framed schools and libraries. Its "
     "buildings use cork insulation from Alentejo forests.",
     ["Escola Modular", "Cork Wall System", "Reading Pavilion"]),
]

FIELDS = ("name", "slug", "city", "country", "founded", "employees", "industry",
          "description", "products")
BY_SLUG = {row[1]: dict(zip(FIELDS, row)) for row in COMPANIES}

# Listed by /api/companies, but missing everywhere else.
GHOST_SLUG = "ghost-systems"
ALL_SLUGS = sorted(list(BY_SLUG) + [GHOST_SLUG])

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>{name} | {industry}</title>
  <meta name="description" content="{description}">
  <link rel="stylesheet" href="/static/site.css">
</head>
<body>
  <header class="masthead">
    <h1>{name}</h1>
    <p class="tagline">{industry} from {city}, {country}</p>
  </header>
  <nav class="topnav">
    <a href="#products">Products</a>
    <a href="#about">About</a>
    <a href="#contact">Contact</a>
  </nav>
  <main>
    <section class="hero">
      <p>{description}</p>
      <a class="button" href="#contact">Talk to us</a>
    </section>
    <section id="products">
      <h2>Products</h2>
      <ul>
{products}
      </ul>
    </section>
    <section id="about">
      <h2>About us</h2>
      <p>{name} was founded in {founded} in {city}, {country}.
         Today the company employs {employees:,} people.</p>
    </section>
  </main>
  <footer id="contact">
    <p>&copy; {name}. All rights reserved.</p>
    <p><a href="mailto:hello@{slug}.example">hello@{slug}.example</a> &middot;
       <a href="/companies/{slug}/careers">Careers</a> &middot;
       <a href="/companies/{slug}/privacy">Privacy</a></p>
  </footer>
  <div id="cookie-banner" class="cookie-banner">
    We use cookies to remember your preferences.
    <button id="cookie-ok" type="button">Accept</button>
  </div>
  <script>
    document.getElementById("cookie-ok").addEventListener("click", function () {{
      document.getElementById("cookie-banner").hidden = true;
    }});
  </script>
</body>
</html>
"""


def company(slug):
    """The company for `slug`, or a 404 (ghost-systems included)."""
    if slug not in BY_SLUG:
        raise HTTPError(404, "not found")
    return BY_SLUG[slug]


def homepage(c):
    """Render a company's homepage; every text value is HTML-escaped."""
    text = {k: escape(v) if isinstance(v, str) else v for k, v in c.items()}
    text["products"] = "\n".join(f"        <li>{escape(p)}</li>" for p in c["products"])
    return PAGE.format(**text)


class SiteHandler(QuietHandler):
    server_version = "queryclaw-demo-site/1.0"

    def page(self, slug):
        self.reply(200, homepage(company(slug)), HTML)

    def api_company(self, slug):
        c = company(slug)
        # Keys in the documented order rather than sorted.
        self.reply_json({k: c[k] for k in FIELDS if k != "description"}, sort_keys=False)

    def api_list(self):
        self.reply_json(ALL_SLUGS)

    asked = set()

    def api_flaky(self, name):
        if name not in SiteHandler.asked:
            SiteHandler.asked.add(name)
            self.reply(503, b"busy, try again\n")
        else:
            self.reply_json({"name": name, "ok": True})

    def api_down(self):
        self.reply(503, b"down for maintenance\n")

    routes = compile_routes(
        (r"/companies/([a-z0-9-]+)", page),
        (r"/api/companies/([a-z0-9-]+)", api_company),
        (r"/api/companies", api_list),
        (r"/api/flaky/([a-z0-9-]+)", api_flaky),
        (r"/api/down", api_down),
    )


if __name__ == "__main__":
    sys.exit(serve(SiteHandler, "Sample company site for the queryclaw_ext demo."))
