#!/usr/bin/env python3
"""test/meta/validate.py: META.json against the PGXN Meta Spec 1.0.0.

No validator for the spec is packaged by Debian, so its rules are checked
here: the required keys and no unknown ones (custom keys start with x_ or
X_), semantic versions, the license names the spec knows, provides,
prereqs with their phases, relations and version ranges, resources, tags,
no_index and release_status.  Then what the spec cannot know: the
distribution matches the control file's default_version and the files it
names exist.  Last, documents broken on purpose must be refused, so that
a validator that accepts anything cannot pass.  Prints TAP-style
"ok"/"not ok" lines; exits 1 on any failure.
"""
import copy
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SEMVER = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)([a-zA-Z][0-9A-Za-z-]*)?$")
LICENSES = {
    "agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd", "freebsd",
    "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1", "lgpl_3_0", "mit",
    "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5", "postgresql", "qpl_1_0", "ssleay",
    "sun", "zlib", "open_source", "restricted", "unrestricted", "unknown",
}
TOP_KEYS = {
    "name": True, "abstract": True, "version": True, "maintainer": True, "license": True,
    "provides": True, "meta-spec": True, "description": False, "prereqs": False,
    "release_status": False, "resources": False, "generated_by": False, "no_index": False,
    "tags": False,
}
PHASES = {"configure", "build", "runtime", "test", "develop"}
RELATIONS = {"requires", "recommends", "suggests", "conflicts"}
RANGE = re.compile(r"^\s*(?:(?:==|!=|>=|<=|>|<)\s*)?(\S+)\s*$")


def custom(key):
    return key.startswith(("x_", "X_"))


def term(value):
    """A name or tag: no slash, backslash or control character."""
    return isinstance(value, str) and value != "" and not re.search(r"[/\\\x00-\x1f\x7f]", value)


def version_range(value):
    if value == 0 or value == "0":
        return True
    if not isinstance(value, str):
        return False
    for part in value.split(","):
        m = RANGE.match(part)
        if not m or not (m.group(1) == "0" or SEMVER.match(m.group(1))):
            return False
    return True


def check_spec(meta):
    """The spec's rules; returns a list of problems."""
    errs = []
    if not isinstance(meta, dict):
        return ["the document is not an object"]
    for key, required in TOP_KEYS.items():
        if required and key not in meta:
            errs.append(f"{key} is missing")
    for key in meta:
        if key not in TOP_KEYS and not custom(key):
            errs.append(f"unknown key {key}")
    spec = meta.get("meta-spec")
    if not isinstance(spec, dict) or spec.get("version") != "1.0.0":
        errs.append("meta-spec.version is not 1.0.0")
    elif any(k not in ("version", "url") and not custom(k) for k in spec):
        errs.append("unknown key in meta-spec")
    name = meta.get("name")
    if not (term(name) and len(name) >= 2 and not re.search(r"\s", name)):
        errs.append("name must be two characters or more, without spaces, slashes or control characters")
    for key in ("abstract", "description", "generated_by"):
        if key in meta and not (isinstance(meta[key], str) and meta[key].strip()):
            errs.append(f"{key} is not a non-empty string")
    if not (isinstance(meta.get("version"), str) and SEMVER.match(meta["version"])):
        errs.append("version is not a semantic version")
    maint = meta.get("maintainer")
    if not (isinstance(maint, str) and maint.strip()) and not (
            isinstance(maint, list) and maint and all(isinstance(m, str) and m.strip() for m in maint)):
        errs.append("maintainer is not a string or a list of strings")
    lic = meta.get("license")
    if isinstance(lic, str):
        if lic not in LICENSES:
            errs.append(f"license {lic} is not one the spec knows")
    elif isinstance(lic, list):
        if not lic or any(x not in LICENSES for x in lic):
            errs.append("license list names a license the spec does not know")
    elif isinstance(lic, dict):
        if not lic or any(not isinstance(v, str) or not v.startswith(("http://", "https://")) for v in lic.values()):
            errs.append("license object values must be URLs")
    else:
        errs.append("license is not a string, a list or an object")
    provides = meta.get("provides")
    if not isinstance(provides, dict) or not provides:
        errs.append("provides is not a non-empty object")
    else:
        for ext, info in provides.items():
            if not term(ext) or not isinstance(info, dict):
                errs.append(f"provides.{ext} is not an extension")
                continue
            for key in info:
                if key not in ("file", "version", "abstract", "docfile") and not custom(key):
                    errs.append(f"unknown key provides.{ext}.{key}")
            if not isinstance(info.get("file"), str):
                errs.append(f"provides.{ext}.file is missing")
            if not (isinstance(info.get("version"), str) and SEMVER.match(info["version"])):
                errs.append(f"provides.{ext}.version is not a semantic version")
    prereqs = meta.get("prereqs", {})
    if not isinstance(prereqs, dict):
        errs.append("prereqs is not an object")
    else:
        for phase, rels in prereqs.items():
            if phase not in PHASES and not custom(phase):
                errs.append(f"unknown prereqs phase {phase}")
            elif not isinstance(rels, dict):
                errs.append(f"prereqs.{phase} is not an object")
            else:
                for rel, reqs in rels.items():
                    if rel not in RELATIONS and not custom(rel):
                        errs.append(f"unknown prereqs.{phase} relation {rel}")
                    elif not isinstance(reqs, dict) or any(not term(n) or not version_range(v) for n, v in reqs.items()):
                        errs.append(f"prereqs.{phase}.{rel} has a bad name or version range")
    if "release_status" in meta and meta["release_status"] not in ("stable", "testing", "unstable"):
        errs.append("release_status is not stable, testing or unstable")
    if "tags" in meta and not (isinstance(meta["tags"], list) and all(term(t) and len(t) < 256 for t in meta["tags"])):
        errs.append("tags is not a list of tags")
    no_index = meta.get("no_index", {})
    if not isinstance(no_index, dict) or any(
            k not in ("file", "directory") and not custom(k) for k in no_index) or any(
            not (isinstance(v, str) or (isinstance(v, list) and all(isinstance(x, str) for x in v)))
            for v in no_index.values()):
        errs.append("no_index is not file and directory lists")
    resources = meta.get("resources", {})
    if not isinstance(resources, dict) or any(
            k not in ("homepage", "bugtracker", "repository") and not custom(k) for k in resources):
        errs.append("resources has an unknown key")
    return errs


def check_project(meta):
    """What the spec cannot know: agreement with the control file and the tree."""
    errs = []
    control = open(os.path.join(ROOT, "queryclaw_ext.control")).read()
    default = re.search(r"^default_version\s*=\s*'([^']*)'", control, re.M).group(1)
    want = default + ".0" * (2 - default.count("."))
    if meta.get("version") != want:
        errs.append(f"version {meta.get('version')} is not the control file's {default} ({want})")
    for ext, info in meta.get("provides", {}).items():
        if not os.path.exists(os.path.join(ROOT, ext + ".control")):
            errs.append(f"provides {ext}, which has no control file")
        if info.get("version") != want:
            errs.append(f"provides.{ext}.version is not {want}")
        for key in ("file", "docfile"):
            if key in info and not os.path.exists(os.path.join(ROOT, info[key])):
                errs.append(f"provides.{ext}.{key} names a missing file")
    if meta.get("license") == "postgresql" and "PostgreSQL License" not in open(os.path.join(ROOT, "README.md")).read() \
            and not os.path.exists(os.path.join(ROOT, "LICENSE")):
        errs.append("license is postgresql but there is no LICENSE")
    return errs


def main():
    failed = 0

    def report(ok, what, errs=()):
        nonlocal failed
        print(("ok - " if ok else "not ok - ") + what)
        for e in errs:
            print("#   " + e)
        failed += not ok

    path = os.path.join(ROOT, "META.json")
    try:
        meta = json.load(open(path))
    except (OSError, ValueError) as e:
        report(False, "META.json is JSON", [str(e)])
        return 1
    errs = check_spec(meta)
    report(not errs, "META.json follows the PGXN Meta Spec 1.0.0", errs)
    errs = check_project(meta)
    report(not errs, "META.json agrees with the control file and the tree", errs)

    broken = {
        "no license": lambda m: m.pop("license"),
        "version not semantic": lambda m: m.update(version="0.2"),
        "unknown license": lambda m: m.update(license="postgres"),
        "unknown key": lambda m: m.update(homepage="x"),
        "provides without file": lambda m: m["provides"]["queryclaw_ext"].pop("file"),
        "bad prereq range": lambda m: m.update(prereqs={"runtime": {"requires": {"PostgreSQL": ">= 15"}}}),
        "unknown phase": lambda m: m.update(prereqs={"install": {"requires": {"PostgreSQL": "15.0.0"}}}),
        "name with a slash": lambda m: m.update(name="query/claw"),
    }
    missed = []
    for what, breaker in broken.items():
        bad = copy.deepcopy(meta)
        breaker(bad)
        if not check_spec(bad):
            missed.append(what)
    report(not missed, f"the validator refuses {len(broken)} documents broken on purpose",
           [f"accepted: {m}" for m in missed])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
