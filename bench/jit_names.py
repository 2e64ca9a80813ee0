#!/usr/bin/env python3
"""Share of frames named in a recording of a JIT program (issue 39), from stacksym's folded
stacks or from `perf script`, the same measures for both.

  jit_names.py folded FILE COMM JIT_NAME...      (stacksym record -o FILE.folded)
  jit_names.py perf   FILE COMM JIT_NAME...      (perf script -F comm,tid,ip,sym,dso > FILE)

Prints one line: samples of threads named COMM, the share of them with a frame whose name
contains one of JIT_PREFIX (a JS function "JS:", a Java method " Hot.", ...), the share of
their leaf frames named, and the share of all their user frames named.
"""
import re
import sys


def unnamed(name):
    # stacksym: "0x7f..." or "module+0x..."; perf: "[unknown]".
    return name in ("", "[unknown]") or re.fullmatch(r"(.*\+)?0x[0-9a-f]+", name) is not None


def folded(path, comm):
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        if not frames or frames[0] != comm:
            continue
        # Outermost first after the comm; kernel frames carry a _[k] suffix.
        user = [f for f in frames[1:] if not f.endswith("_[k]") and not f.startswith("[off-cpu")]
        yield int(count), list(reversed(user))  # leaf first


def perf(path, comm):
    frames, head = [], None
    for line in list(open(path, errors="replace")) + [""]:
        line = line.rstrip("\n")
        if not line.strip():
            if head is not None and head.split()[0] == comm:
                yield 1, frames
            frames, head = [], None
        elif head is None:
            head = line
        else:
            parts = line.split(None, 1)
            rest = parts[1] if len(parts) > 1 else ""
            m = re.match(r"(.*) \((.*)\)$", rest)
            sym, dso = (m.group(1), m.group(2)) if m else (rest, "")
            if dso.startswith("[kernel"):
                continue
            sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
            frames.append(sym)


def main():
    kind, path, comm, prefixes = sys.argv[1], sys.argv[2], sys.argv[3], tuple(sys.argv[4:])
    reader = folded if kind == "folded" else perf
    samples = jit = leaf_named = frames = named = 0
    for count, user in reader(path, comm):
        samples += count
        if any(p in f for f in user for p in prefixes):
            jit += count
        if user and not unnamed(user[0]):
            leaf_named += count
        frames += count * len(user)
        named += count * sum(1 for f in user if not unnamed(f))
    pct = lambda a, b: f"{100.0 * a / b:5.1f} %" if b else "    -"
    print(f"{samples:6d} samples  {pct(jit, samples)} name a program function  "
          f"{pct(leaf_named, samples)} leaf named  {pct(named, frames)} of frames named")


if __name__ == "__main__":
    main()
