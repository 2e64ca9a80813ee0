# A hot Python function for recordings of CPython 3.12's perf trampolines (-X perf, issue 39):
# leaf_hot does the work, caller_hot calls it; runs for argv[1] seconds (default 2).
import math
import sys
import time


def leaf_hot(n):
    s = 0.0
    for i in range(n):
        s += math.sqrt(i)
    return s


def caller_hot(n):
    return leaf_hot(n) + 1


end = time.monotonic() + float(sys.argv[1] if len(sys.argv) > 1 else 2)
total = 0.0
while time.monotonic() < end:
    total += caller_hot(20000)
print("done" if total > 0 else "never")
