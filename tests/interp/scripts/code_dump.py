# Dumps CPython code objects as they lie in this process's memory (ctypes reads the bytes at each
# object's id()), with what Python itself says about them: for tests/interp/code_object_test.cc,
# which reads them back through the code-object reader, and for the fuzzer's seeds.
#
#   python3.11 code_dump.py json            one JSON object on stdout
#   python3.11 code_dump.py seeds DIR       one fuzz_python_code input per code object in DIR
import ctypes
import json
import struct
import sys
import types


def raw(obj):
    # __sizeof__ without the GC header getsizeof() adds (which lies before the object).
    size = type(obj).__sizeof__(obj)
    return ctypes.string_at(id(obj), size)


def café():  # a Latin-1 name (compact, 1 byte per code point, not ASCII)
    return 1


def функция():  # a UCS-2 name
    x = 1
    return x + 1


UCS4_SOURCE = "def f():\n    return 1\n"
ucs4 = {}
exec(compile(UCS4_SOURCE, "/tmp/\U0001f40d/snake.py", "exec"), ucs4)  # a UCS-4 file name


def long_function(n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            total += i
        elif i % 5 == 0:
            total -= i
        else:
            try:
                total //= (i - 7)
            except ZeroDivisionError:
                total = -1
    return [x * 2 for x in range(total % 10)]


def code_objects():
    import asyncio.base_events
    import json.decoder
    import threading
    roots = [café.__code__, функция.__code__, ucs4["f"].__code__, long_function.__code__]
    for module in (json.decoder, threading, asyncio.base_events):
        for value in vars(module).values():
            if isinstance(value, types.FunctionType):
                roots.append(value.__code__)
            elif isinstance(value, type):
                for attr in vars(value).values():
                    if isinstance(attr, types.FunctionType):
                        roots.append(attr.__code__)
    # Nested code objects (comprehensions, inner functions, lambdas) too.
    seen, out = set(), []
    while roots:
        code = roots.pop()
        if id(code) in seen:
            continue
        seen.add(id(code))
        out.append(code)
        roots.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return out


def describe(code):
    objects = [code, code.co_name, code.co_qualname, code.co_filename, code.co_linetable]
    return {
        "address": id(code),
        "name": code.co_name,
        "qualname": code.co_qualname,
        "filename": code.co_filename,
        "first_line": code.co_firstlineno,
        "lines": [p[0] if p[0] is not None else -1 for p in code.co_positions()],
        "regions": [[id(o), raw(o).hex()] for o in objects],
    }


def main():
    codes = code_objects()
    type_ids = {"code": id(types.CodeType), "unicode": id(str), "bytes": id(bytes)}
    if sys.argv[1] == "json":
        print(json.dumps({"version": [sys.version_info.major, sys.version_info.minor],
                          "types": type_ids, "codes": [describe(c) for c in codes]}))
        return
    # Seeds: minor version byte, code address, type addresses, regions, then the line table
    # again as raw bytes for the location-table decoder (fuzz/fuzz_python_code.cc's format).
    out_dir = sys.argv[2]
    for i, code in enumerate(codes[:64]):
        d = describe(code)
        blob = struct.pack("<BQQQQH", sys.version_info.minor, d["address"], type_ids["code"],
                           type_ids["unicode"], type_ids["bytes"], len(d["regions"]))
        for address, data in d["regions"]:
            data = bytes.fromhex(data)
            blob += struct.pack("<QI", address, len(data)) + data
        blob += code.co_linetable
        path = "%s/code_%02d" % (out_dir, i)
        with open(path, "wb") as f:
            f.write(blob)
        print(path)


if __name__ == "__main__":
    main()
