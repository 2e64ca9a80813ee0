// libFuzzer target for the CPython readers of process memory: the code-object reader (strings,
// the line table) alone and through its cache, the location-table decoder, and the thread-state
// list and frame walk, over a memory image made of the input. Input: minor version byte (11-13
// after wrapping), the code object's address, the type objects' addresses, a count of regions and
// the regions (address, length, bytes), and the rest as a raw location table. Seeds: code objects
// dumped from a python3.11 process (fuzz/seeds/fuzz_python_code.sh).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "base/byte_cursor.h"
#include "interp/python/code_cache.h"
#include "interp/python/code_object.h"
#include "interp/python/frame_walk.h"
#include "interp/python/line_table.h"

using namespace stacksym::interp::python;

namespace {

void CheckTable(std::span<const uint8_t> table, int32_t first_line) {
  uint32_t next = 0;
  ForEachLocation(table, first_line, [&](const LocationRange& r) {
    if (r.start != next || r.end <= r.start || r.end - r.start > 8) __builtin_trap();
    next = r.end;
    return true;
  });
  for (int64_t i = -1; i < 64; i += 3) {
    LineLookup l = LineOfInstruction(table, first_line, i);
    if (l.status != LineStatus::kFound && l.line != 0) __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stacksym::ByteCursor c(data, size);
  uint8_t minor = static_cast<uint8_t>(11 + c.U8() % 3);
  uint64_t code_address = c.U64();
  TypeAddresses types{c.U64(), c.U64(), c.U64()};
  uint16_t regions = c.U16();
  BufferMemory memory;
  std::vector<uint64_t> starts;
  for (uint16_t i = 0; i < regions && i < 64 && c.ok(); ++i) {
    uint64_t address = c.U64();
    uint32_t length = c.U32();
    std::span<const uint8_t> bytes = c.Bytes(length);
    if (!c.ok()) break;
    memory.Add(address, std::vector<uint8_t>(bytes.begin(), bytes.end()));
    starts.push_back(address);
  }
  std::span<const uint8_t> rest(c.position(), c.remaining());
  CheckTable(rest, static_cast<int32_t>(size));

  Layout layout = *BuiltinLayout({3, minor, 0, 0});
  for (const TypeAddresses& t : {types, TypeAddresses{}}) {
    CodeRead read = ReadCodeObject(memory, layout, t, code_address);
    if (read.code.has_value() != (read.error == CodeError::kNone)) __builtin_trap();
    if (read.code) {
      if (read.code->line_table.size() > kMaxLineTableBytes) __builtin_trap();
      CheckTable(read.code->line_table, read.code->first_line);
    }
  }
  // Through the cache, with a fingerprint the sample saw: named only by an object that has it.
  CodeCache cache;
  uint16_t check = static_cast<uint16_t>(size * 0x9e37);
  for (int64_t instruction : {int64_t{-1}, int64_t{1} << 20}) {
    const CodeCache::Entry& e =
        cache.Get(1, code_address, memory, layout, types, instruction, check);
    if (e.code && (e.error != CodeError::kNone || e.code->Check() != check)) __builtin_trap();
  }
  for (uint64_t start : starts) {
    std::string s;
    (void)ReadString(memory, layout, 0, start, &s);
    if (s.size() > 4 * kMaxStringLength) __builtin_trap();
  }
  // The same image as thread states and frames.
  std::vector<ThreadState> threads = ListThreadStates(memory, layout, code_address, 64);
  FrameWalk walk = WalkFrames(memory, layout, code_address, 64);
  if (walk.frames.size() > 64) __builtin_trap();
  for (const ThreadState& t : threads) (void)WalkFrames(memory, layout, t.address, 16);
  return 0;
}
