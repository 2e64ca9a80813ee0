#!/usr/bin/env python3
"""Compares two lit JSON result files (lit -o): the real llvm-symbolizer-16's run and stacksym's.

Prints each run's counts and the tests that fail only with stacksym; writes the lit output of
each of those (the failing RUN line and FileCheck's report) to LOG.

    compare.py REAL.json STACKSYM.json LOG
"""
import collections
import json
import re
import sys

FAILING = {"FAIL", "XPASS", "TIMEOUT", "UNRESOLVED"}


def load(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return {t["name"].removeprefix("LLVM :: "): t for t in data["tests"]}


def counts(results):
    c = collections.Counter(t["code"] for t in results.values())
    passed = c["PASS"] + c["XFAIL"]
    failed = sum(c[k] for k in FAILING)
    other = sum(c.values()) - passed - failed - c["UNSUPPORTED"]
    text = f"{passed} passed, {failed} failed, {c['UNSUPPORTED']} unsupported"
    return text + (f", {other} other" if other else "") + f" (of {len(results)})"


def main():
    real_path, ours_path, log_path = sys.argv[1:4]
    real, ours = load(real_path), load(ours_path)
    print(f"llvm-symbolizer-16: {counts(real)}")
    print(f"stacksym:           {counts(ours)}")

    only_ours = sorted(n for n, t in ours.items()
                       if t["code"] in FAILING and real.get(n, {}).get("code") not in FAILING)
    only_real = sorted(n for n, t in real.items()
                       if t["code"] in FAILING and ours.get(n, {}).get("code") not in FAILING)
    both = sorted(n for n, t in ours.items()
                  if t["code"] in FAILING and real.get(n, {}).get("code") in FAILING)

    with open(log_path, "w", encoding="utf-8") as log:
        for name in only_ours:
            log.write(f"{'=' * 20} {name} ({ours[name]['code']} with stacksym, "
                      f"{real.get(name, {}).get('code', 'absent')} with llvm-symbolizer-16)\n")
            log.write(ours[name].get("output", "").rstrip() + "\n\n")

    print(f"\n{len(only_ours)} tests fail only with stacksym (lit output of each: {log_path}):")
    for name in only_ours:
        first = next((line for line in ours[name].get("output", "").splitlines()
                      if "error:" in line), "")
        first = re.sub(r"^\S*/", "", first.strip())  # the test's path, up to its name
        print(f"  {name}" + (f"   {first[:100]}" if first else ""))
    if only_real:
        print(f"\n{len(only_real)} tests fail only with llvm-symbolizer-16: " + ", ".join(only_real))
    if both:
        print(f"\n{len(both)} tests fail with both: " + ", ".join(both))


if __name__ == "__main__":
    main()
