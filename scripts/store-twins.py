#!/usr/bin/env python3
"""How much of the store is written twice (issue 27's measure).

    python3 scripts/store-twins.py [REV]

reads store/src at REV (default: the work tree) and prints the lines of
store/src (all of it, and store/src/pg alone) and the SQL statements whose
text occurs more than once once placeholders (`?N`, `$N`) and whitespace
are normalised: the statements a second backend copies.
"""
import re
import subprocess
import sys
from collections import Counter

rev = sys.argv[1] if len(sys.argv) > 1 else None


def files():
    if rev:
        out = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "store/src"],
                             capture_output=True, text=True, check=True).stdout.split()
        for path in out:
            if path.endswith(".rs"):
                yield path, subprocess.run(["git", "show", f"{rev}:{path}"], capture_output=True,
                                           text=True, check=True).stdout
    else:
        out = subprocess.run(["git", "ls-files", "store/src"], capture_output=True, text=True,
                             check=True).stdout.split()
        for path in out:
            if path.endswith(".rs"):
                yield path, open(path, encoding="utf-8").read()


STRING = re.compile(r'"((?:[^"\\]|\\.)*)"', re.S)
SQL = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|WITH)\b", re.I)


def normal(s):
    s = re.sub(r"\\\n\s*", " ", s)
    s = re.sub(r"[?$](\d+)", r"$\1", s)
    return re.sub(r"\s+", " ", s).strip()


lines = {"all": 0, "pg": 0, "tests": 0}
seen = Counter()
for path, text in files():
    n = text.count("\n")
    lines["all"] += n
    if path.startswith("store/src/pg/"):
        lines["pg"] += n
    if path.endswith("tests.rs"):
        lines["tests"] += n
    # Only product code: a file's #[cfg(test)] tail is left out.
    body = text.split("#[cfg(test)]\nmod tests")[0]
    if path.endswith("tests.rs") or path.endswith("plans.rs") or path.endswith("fresh.rs"):
        continue
    for m in STRING.finditer(body):
        # A statement, not a `concat!` fragment such as a bare "SELECT ".
        if SQL.match(m.group(1)) and len(m.group(1).split()) > 1:
            seen[normal(m.group(1))] += 1

twice = {s: c for s, c in seen.items() if c > 1}
print(f"lines in store/src: {lines['all']} (store/src/pg: {lines['pg']}, tests.rs: {lines['tests']})")
print(f"SQL statements (distinct texts): {len(seen)}; written more than once: {len(twice)}")
for s, c in sorted(twice.items(), key=lambda x: -x[1]):
    print(f"  {c}x {s[:110]}")
