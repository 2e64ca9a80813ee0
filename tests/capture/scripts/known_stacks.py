# A program of known structure for the recording tests (python_record_test.cc): the main thread
# burns CPU in a generator under a recursion, nested functions and a method of a nested class;
# a second thread burns CPU in zlib.compress (C). Each part runs for a fixed CPU time
# (thread_time), and the CPU each took is written as JSON to argv[1]. Lines the test checks
# carry a "# @name" marker: the test finds them in this file. argv[3], if given, is a wait in
# seconds before any of it (an ASan-built recorder registers the interpreter late).
import json
import sys
import threading
import time
import zlib

SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 0.4
START_DELAY = float(sys.argv[3]) if len(sys.argv) > 3 else 0.0
DATA = bytes(range(256)) * 2000
spent = {}


def burn_zlib(seconds):
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        zlib.compress(DATA, 9)  # @zlib
    spent["burn_zlib"] = time.thread_time() - start


def gen(seconds):
    start = time.thread_time()
    x = 0
    while time.thread_time() - start < seconds:  # @gen_while
        x = (x * 31 + 7) % 1000003  # @gen_loop
    spent["gen"] = time.thread_time() - start
    yield x


def recurse(n, seconds):
    if n == 0:
        return sum(gen(seconds))  # @recurse_base
    return recurse(n - 1, seconds)  # @recurse


def nested(seconds):
    def inner(s):
        return recurse(5, s)  # @inner

    return inner(seconds)  # @nested


class Outer:
    class Inner:
        def method(self, seconds):
            return nested(seconds)  # @method


def main():
    time.sleep(START_DELAY)
    worker = threading.Thread(target=burn_zlib, args=(SECONDS,), name="zlib")
    worker.start()
    Outer.Inner().method(SECONDS)  # @main
    worker.join()
    spent["process"] = time.process_time()
    with open(sys.argv[1], "w") as out:
        json.dump(spent, out)


main()  # @module
