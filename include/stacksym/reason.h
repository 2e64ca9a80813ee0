// stacksym/reason.h — why an address has no answer.
//
// A Reason is an expected, per-address outcome ("this address is not in any segment"), not an
// error: batches carry one per address that could not be resolved, and the other addresses
// are still answered. Print with ReasonText(); ReasonName() gives a stable snake_case token
// for JSON and tests.
#pragma once

#include <cstdint>

namespace stacksym {

enum class Reason : uint8_t {
  kNotInSegment,           // the address lies in no PT_LOAD segment of the file
  kNoSymbol,               // the file has symbols, but none covers the address
  kNoSymbols,              // the file has no symbol table at all
  kUnmapped,               // no VMA of the process covers the address
  kNoBuildId,              // the mapped file has no build ID
  kAnonymous,              // the address is in anonymous memory (heap, stack, JIT without map)
  kVdso,                   // the address is in the vDSO
  kProcessGone,            // the process exited before or during the call
  kAccessDenied,           // EACCES/EPERM reading process memory maps or files
  kFileUnavailable,        // the backing file could not be opened or is not valid ELF
  kInvalidAddress,         // the input address itself is meaningless (e.g. 0)
  kCorruptData,            // the data needed for this address is malformed
  kNotFound,               // no file with the requested build ID was found
  kKernelAddressesHidden,  // kallsyms shows zeros (kptr_restrict)
};

const char* ReasonName(Reason reason);  // "no_symbol"
const char* ReasonText(Reason reason);  // "no symbol covers the address"

}  // namespace stacksym
