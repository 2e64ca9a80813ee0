// The jitdump format (Linux tools/perf/Documentation/jitdump-specification.txt): the file JIT
// agents write for `perf inject --jit` (V8/Node --perf-prof, the JVM's libperf-jvmti, ...),
// jit-PID.dump. A 40-byte header (magic "JiTD", version, header size, ELF machine, pid,
// timestamp, flags), then records, each a 16-byte prefix (id, size with the prefix, timestamp)
// and its body. Read here: JIT_CODE_LOAD (pid, tid, vma, code address, code size, code index,
// the function's name, then the code) and JIT_CODE_MOVE (the code of an index moved to a new
// address); debug and unwinding records are skipped, JIT_CODE_CLOSE ends the file.
//
// Read through ByteCursor, every size checked (code running past 2^64 is skipped): the file is
// untrusted and may be cut short while its process still writes it (then the records before
// the cut are kept).
//
//   Result<JitDump> dump = ReadJitDump(bytes);
//   for (const JitCodeLoad& load : dump->loads) ... load.code_addr, load.name ...
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "stacksym/result.h"

namespace stacksym::symbolize {

struct JitCodeLoad {
  uint64_t code_addr = 0;
  uint64_t code_size = 0;
  uint64_t code_index = 0;
  uint64_t timestamp = 0;
  std::string_view name;  // points into the dump's bytes
};

struct JitDump {
  uint32_t version = 0;
  uint32_t elf_mach = 0;
  uint32_t pid = 0;
  // Code loads in file order; a move is a load of its code's name at the new address.
  std::vector<JitCodeLoad> loads;
  uint64_t records = 0;          // records read (of any type)
  uint64_t skipped_records = 0;  // loads or moves whose body is malformed, moves of unknown code
  bool truncated = false;        // the last record ran past the end of the bytes
};

// kMalformed for a file that is not a jitdump (short header, bad magic, header size, a record
// size below its prefix); kUnsupported for one written in the other byte order.
Result<JitDump> ReadJitDump(std::span<const uint8_t> bytes);

}  // namespace stacksym::symbolize
