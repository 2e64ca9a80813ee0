#include "symbolize/jitdump.h"

#include <string>
#include <unordered_map>

#include "base/byte_cursor.h"

namespace stacksym::symbolize {
namespace {

constexpr uint32_t kMagic = 0x4A695444;         // "JiTD" as a native (little-endian) u32
constexpr uint32_t kSwappedMagic = 0x4454694A;  // written by a big-endian process
// Up to the pid; version 1's is 40 bytes (timestamp and flags), and a writer may add fields.
constexpr size_t kMinHeaderSize = 24;
constexpr size_t kRecordPrefix = 16;

enum RecordId : uint32_t {
  kCodeLoad = 0,
  kCodeMove = 1,
  kCodeDebugInfo = 2,
  kCodeClose = 3,
  kCodeUnwindingInfo = 4,
};

Error Malformed(const std::string& what, size_t offset) {
  return Error(ErrorCode::kMalformed, "jitdump: " + what).WithOffset(offset);
}

}  // namespace

Result<JitDump> ReadJitDump(std::span<const uint8_t> bytes) {
  ByteCursor header(bytes);
  uint32_t magic = header.U32();
  if (header.failed()) return Malformed("shorter than its magic", 0);
  if (magic == kSwappedMagic) {
    return Error(ErrorCode::kUnsupported, "jitdump: written in big-endian byte order");
  }
  if (magic != kMagic) return Malformed("bad magic", 0);
  JitDump dump;
  dump.version = header.U32();
  uint32_t header_size = header.U32();
  dump.elf_mach = header.U32();
  header.U32();  // pad1
  dump.pid = header.U32();
  if (header.failed()) return Malformed("header cut short", header.offset());
  if (header_size < kMinHeaderSize || header_size > bytes.size()) {
    return Malformed("header size " + std::to_string(header_size), 8);
  }
  std::unordered_map<uint64_t, std::string_view> names;  // by code index, for moves
  ByteCursor records(bytes);
  records.Seek(header_size);
  while (!records.at_end()) {
    const size_t offset = records.offset();
    if (records.remaining() < kRecordPrefix) {
      dump.truncated = true;
      break;
    }
    uint32_t id = records.U32();
    uint32_t size = records.U32();
    uint64_t timestamp = records.U64();
    if (size < kRecordPrefix) return Malformed("record size " + std::to_string(size), offset);
    if (size - kRecordPrefix > records.remaining()) {
      dump.truncated = true;  // still being written
      break;
    }
    ByteCursor body = records.Sub(size - kRecordPrefix);
    ++dump.records;
    if (id == kCodeClose) break;
    if (id != kCodeLoad && id != kCodeMove) continue;  // debug, unwinding, future records
    body.U32();                                        // pid
    body.U32();                                        // tid
    body.U64();                                        // vma
    JitCodeLoad load;
    load.timestamp = timestamp;
    if (id == kCodeLoad) {
      load.code_addr = body.U64();
      load.code_size = body.U64();
      load.code_index = body.U64();
      load.name = body.CStr();
      // The code follows the name; it must fit the record too.
      if (body.ok() && body.remaining() < load.code_size) body.Fail();
    } else {
      body.U64();  // old code address
      load.code_addr = body.U64();
      load.code_size = body.U64();
      load.code_index = body.U64();
    }
    // Code running past the top of the address space is no code a process could hold (and a
    // table of it could not cover its last byte).
    if (body.failed() || load.code_size == 0 || load.code_size > UINT64_MAX - load.code_addr) {
      ++dump.skipped_records;
      continue;
    }
    if (id == kCodeLoad) {
      names[load.code_index] = load.name;
    } else {
      auto it = names.find(load.code_index);
      if (it == names.end()) {
        ++dump.skipped_records;
        continue;
      }
      load.name = it->second;
    }
    if (load.name.empty()) {
      ++dump.skipped_records;
      continue;
    }
    dump.loads.push_back(load);
  }
  return dump;
}

}  // namespace stacksym::symbolize
