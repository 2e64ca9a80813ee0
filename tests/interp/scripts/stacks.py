# Python programs of known structure for the frame-walk tests (tests/interp/live_walk_test.cc).
# `python3.11 stacks.py SCENARIO` runs SCENARIO until a known point, prints one JSON line with
# every thread's Python stack as the program itself sees it (qualified name, file, current line,
# first line and code object address of each frame, innermost first) and waits for a line on
# stdin before it exits. The tests read the same stacks from the process's memory and compare.
import asyncio
import json
import sys
import threading
import zlib

_release = threading.Event()


def describe(frame):
    out = []
    while frame is not None:
        code = frame.f_code
        out.append({"qualname": code.co_qualname, "name": code.co_name,
                    "file": code.co_filename, "line": frame.f_lineno,
                    "first_line": code.co_firstlineno, "code": id(code)})
        frame = frame.f_back
    return out


def report_and_wait():
    me = threading.get_ident()
    natives = {t.ident: t.native_id for t in threading.enumerate()}
    threads = {}
    for ident, frame in sys._current_frames().items():
        if ident != me:
            threads[str(natives[ident])] = describe(frame)
    here = describe(sys._getframe(0))
    here[0]["line"] = sys._getframe(0).f_lineno + 3  # the readline below
    threads[str(threading.get_native_id())] = here
    print(json.dumps({"tid": threading.get_native_id(), "threads": threads}), flush=True)
    sys.stdin.readline()
    _release.set()


def inner():
    report_and_wait()


def middle():
    inner()


def outer():
    middle()


class Worker:
    class Step:
        def run(self):
            report_and_wait()

    def run(self):
        self.helper()

    def helper(self):
        Worker.Step().run()


def make_closure():
    def closure():
        report_and_wait()
    return closure


def generator():
    yield 1
    report_and_wait()
    yield 2


def consume():
    for _ in generator():
        pass


async def leaf_coroutine():
    report_and_wait()


async def root_coroutine():
    await leaf_coroutine()


def recurse(n):
    if n == 0:
        report_and_wait()
    else:
        recurse(n - 1)


def key_function(x):
    if x == 3:
        report_and_wait()
    return x


def call_through_c():
    # sorted() is C: key_function runs in an evaluator call of its own.
    sorted([5, 3, 1], key=key_function)


def blocked_worker():
    _release.wait()


def compressing_worker():
    data = bytes(range(256)) * 64
    while not _release.is_set():
        zlib.compress(data, 9)


def two_threads():
    threads = [threading.Thread(target=blocked_worker, name="blocked"),
               threading.Thread(target=compressing_worker, name="compressing")]
    for t in threads:
        t.start()
    outer()
    for t in threads:
        t.join()


SCENARIOS = {
    "nested": outer,
    "methods": lambda: Worker().run(),
    "closure": lambda: make_closure()(),
    "generator": consume,
    "coroutine": lambda: asyncio.run(root_coroutine()),
    "recursion": lambda: recurse(40),
    "c_call": call_through_c,
    "threads": two_threads,
}


def main():
    SCENARIOS[sys.argv[1]]()


if __name__ == "__main__":
    main()
