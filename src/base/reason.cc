#include "stacksym/reason.h"

namespace stacksym {

const char* ReasonName(Reason reason) {
  switch (reason) {
    case Reason::kNotInSegment:
      return "not_in_segment";
    case Reason::kNoSymbol:
      return "no_symbol";
    case Reason::kNoSymbols:
      return "no_symbols";
    case Reason::kUnmapped:
      return "unmapped";
    case Reason::kNoBuildId:
      return "no_build_id";
    case Reason::kAnonymous:
      return "anonymous";
    case Reason::kVdso:
      return "vdso";
    case Reason::kProcessGone:
      return "process_gone";
    case Reason::kAccessDenied:
      return "access_denied";
    case Reason::kFileUnavailable:
      return "file_unavailable";
    case Reason::kInvalidAddress:
      return "invalid_address";
    case Reason::kCorruptData:
      return "corrupt_data";
    case Reason::kNotFound:
      return "not_found";
    case Reason::kKernelAddressesHidden:
      return "kernel_addresses_hidden";
  }
  return "unknown";
}

const char* ReasonText(Reason reason) {
  switch (reason) {
    case Reason::kNotInSegment:
      return "address is not in any loadable segment";
    case Reason::kNoSymbol:
      return "no symbol covers the address";
    case Reason::kNoSymbols:
      return "file has no symbols";
    case Reason::kUnmapped:
      return "address is not mapped in the process";
    case Reason::kNoBuildId:
      return "mapped file has no build ID";
    case Reason::kAnonymous:
      return "address is in anonymous memory";
    case Reason::kVdso:
      return "address is in the vDSO";
    case Reason::kProcessGone:
      return "process has exited";
    case Reason::kAccessDenied:
      return "permission denied";
    case Reason::kFileUnavailable:
      return "backing file is unavailable";
    case Reason::kInvalidAddress:
      return "invalid address";
    case Reason::kCorruptData:
      return "data needed for this address is corrupt";
    case Reason::kNotFound:
      return "no file with that build ID was found";
    case Reason::kKernelAddressesHidden:
      return "kernel addresses are hidden (kptr_restrict); run as root or lower "
             "/proc/sys/kernel/kptr_restrict";
  }
  return "unknown reason";
}

}  // namespace stacksym
