# Code objects made and freed while they are sampled, for python_record_test.cc: each round
# compiles a module that defines leaf_N, runs leaf_N for 2 ms and drops it, so that the code
# objects of later rounds take the addresses of earlier ones before the recorder reads them.
# Every leaf has the same code but for one constant: leaf_N spins in spin() under N % 3 + 1
# frames of hop(). A frame named from the leaf that took its address shows as a leaf_M over
# the wrong number of hops (two times in three). Writes the number of rounds and how many
# leaves' code objects took an address an earlier leaf's had, as JSON, to argv[1].
import json
import sys
import time


def spin(until):
    x = 0
    while time.monotonic() < until:
        x += 1
    return x


def hop(more, until):
    return hop(more - 1, until) if more > 0 else spin(until)


LEAF = "def leaf_{n}(until):\n    return hop({more}, until)\n"


def driver(seconds):
    end = time.monotonic() + seconds
    rounds = reused = 0
    seen = set()
    while time.monotonic() < end:
        rounds += 1
        names = {"hop": hop}
        text = LEAF.format(n=rounds, more=rounds % 3)
        exec(compile(text, "<churn %d>" % rounds, "exec"), names)
        leaf = names["leaf_%d" % rounds]
        address = id(leaf.__code__)
        reused += address in seen
        seen.add(address)
        leaf(time.monotonic() + 0.002)
        del leaf, names
    return rounds, reused


rounds, reused = driver(float(sys.argv[2]))
with open(sys.argv[1], "w") as out:
    json.dump({"rounds": rounds, "reused": reused}, out)
