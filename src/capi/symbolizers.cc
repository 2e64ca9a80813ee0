// The C handles around ElfSymbolizer, ProcessSymbolizer and BuildIdSymbolizer.
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "capi_internal.h"
#include "stacksym/build_id.h"
#include "stacksym/elf.h"
#include "stacksym/process.h"
#include "stacksym/symbolize.h"

// Each handle keeps the options it was made with: setting the function names makes its
// symbolizer anew with them.
struct stacksym_elf {
  std::unique_ptr<stacksym::ElfSymbolizer> symbolizer;
  std::string build_id_hex;
  std::string path;
  stacksym::SymbolizeOptions options;
};

struct stacksym_process {
  std::unique_ptr<stacksym::ProcessSymbolizer> symbolizer;
  stacksym::ProcessSymbolizerOptions options;
};

struct stacksym_build_ids {
  std::unique_ptr<stacksym::BuildIdSymbolizer> symbolizer;
  stacksym::SymbolizeOptions options;
};

namespace {

using stacksym::capi::Fail;
using stacksym::capi::FromC;
using stacksym::capi::Guard;
using stacksym::capi::MakeList;
using stacksym::capi::MissingArgument;

// Checks `names` and applies it to `options`; false (with the error set) for unknown values.
bool SetFunctionNames(stacksym_function_names names, stacksym::SymbolizeOptions* options) {
  if (names != STACKSYM_FUNCTION_NAMES_LINKAGE && names != STACKSYM_FUNCTION_NAMES_SHORT) {
    Fail(STACKSYM_ERROR_INVALID_ARGUMENT, "unknown function names value");
    return false;
  }
  options->short_function_names = names == STACKSYM_FUNCTION_NAMES_SHORT;
  return true;
}

}  // namespace

extern "C" {

void stacksym_options_init(stacksym_options* options) {
  if (!options) return;
  *options = stacksym_options{};
  options->demangle = 1;
  options->debug_info = 1;
  options->inlines = 1;
}

stacksym_status stacksym_elf_open(const char* path, const stacksym_options* options,
                                  stacksym_elf** out) {
  return Guard([&] {
    if (!out) return MissingArgument("out");
    *out = nullptr;
    if (!path) return MissingArgument("path");
    auto symbolizer = stacksym::ElfSymbolizer::Open(path, FromC(options));
    if (!symbolizer) return Fail(symbolizer.error());
    auto elf = std::make_unique<stacksym_elf>();
    elf->path = path;
    elf->options = FromC(options);
    elf->build_id_hex = (*symbolizer)->elf().build_id_hex();
    elf->symbolizer = std::move(*symbolizer);
    *out = elf.release();
    return STACKSYM_OK;
  });
}

void stacksym_elf_close(stacksym_elf* elf) { delete elf; }

stacksym_status stacksym_elf_set_function_names(stacksym_elf* elf, stacksym_function_names names) {
  return Guard([&] {
    if (!elf) return MissingArgument("elf");
    stacksym::SymbolizeOptions options = elf->options;
    if (!SetFunctionNames(names, &options)) return STACKSYM_ERROR_INVALID_ARGUMENT;
    auto symbolizer = stacksym::ElfSymbolizer::Open(elf->path, options);
    if (!symbolizer) return Fail(symbolizer.error());
    elf->symbolizer = std::move(*symbolizer);
    elf->options = std::move(options);
    return STACKSYM_OK;
  });
}

const char* stacksym_elf_build_id(const stacksym_elf* elf) {
  return elf ? elf->build_id_hex.c_str() : "";
}

stacksym_status stacksym_elf_symbolize(stacksym_elf* elf, const uint64_t* addresses, size_t count,
                                       stacksym_address_kind kind, stacksym_symbolized_list** out) {
  return Guard([&] {
    if (!out) return MissingArgument("out");
    *out = nullptr;
    if (!elf) return MissingArgument("elf");
    if (!addresses && count > 0) return MissingArgument("addresses");
    if (kind != STACKSYM_VIRTUAL_ADDRESS && kind != STACKSYM_FILE_OFFSET)
      return Fail(STACKSYM_ERROR_INVALID_ARGUMENT, "unknown address kind");
    auto answers = elf->symbolizer->SymbolizeBatch(std::span<const uint64_t>(addresses, count),
                                                   kind == STACKSYM_FILE_OFFSET
                                                       ? stacksym::AddressKind::kFileOffset
                                                       : stacksym::AddressKind::kVirtual);
    *out = MakeList(std::move(answers));
    return STACKSYM_OK;
  });
}

stacksym_status stacksym_process_new(const stacksym_options* options, stacksym_process** out) {
  return Guard([&] {
    if (!out) return MissingArgument("out");
    *out = nullptr;
    stacksym::ProcessSymbolizerOptions process_options;
    process_options.symbolize = FromC(options);
    auto process = std::make_unique<stacksym_process>();
    process->symbolizer = std::make_unique<stacksym::ProcessSymbolizer>(process_options);
    process->options = std::move(process_options);
    *out = process.release();
    return STACKSYM_OK;
  });
}

void stacksym_process_free(stacksym_process* process) { delete process; }

stacksym_status stacksym_process_set_function_names(stacksym_process* process,
                                                    stacksym_function_names names) {
  return Guard([&] {
    if (!process) return MissingArgument("process");
    stacksym::ProcessSymbolizerOptions options = process->options;
    if (!SetFunctionNames(names, &options.symbolize)) return STACKSYM_ERROR_INVALID_ARGUMENT;
    process->symbolizer = std::make_unique<stacksym::ProcessSymbolizer>(options);
    process->options = std::move(options);
    return STACKSYM_OK;
  });
}

stacksym_status stacksym_process_symbolize(stacksym_process* process, pid_t pid,
                                           const uint64_t* addresses, size_t count,
                                           stacksym_symbolized_list** out) {
  return Guard([&] {
    if (!out) return MissingArgument("out");
    *out = nullptr;
    if (!process) return MissingArgument("process");
    if (!addresses && count > 0) return MissingArgument("addresses");
    auto answers = process->symbolizer->Symbolize(pid, std::span<const uint64_t>(addresses, count));
    if (!answers) return Fail(answers.error());
    *out = MakeList(std::move(*answers));
    return STACKSYM_OK;
  });
}

stacksym_status stacksym_build_ids_new(const stacksym_options* options, stacksym_build_ids** out) {
  return Guard([&] {
    if (!out) return MissingArgument("out");
    *out = nullptr;
    auto symbolizer = std::make_unique<stacksym_build_ids>();
    symbolizer->options = FromC(options);
    symbolizer->symbolizer = std::make_unique<stacksym::BuildIdSymbolizer>(symbolizer->options);
    *out = symbolizer.release();
    return STACKSYM_OK;
  });
}

void stacksym_build_ids_free(stacksym_build_ids* symbolizer) { delete symbolizer; }

stacksym_status stacksym_build_ids_set_function_names(stacksym_build_ids* symbolizer,
                                                      stacksym_function_names names) {
  return Guard([&] {
    if (!symbolizer) return MissingArgument("symbolizer");
    stacksym::SymbolizeOptions options = symbolizer->options;
    if (!SetFunctionNames(names, &options)) return STACKSYM_ERROR_INVALID_ARGUMENT;
    symbolizer->symbolizer = std::make_unique<stacksym::BuildIdSymbolizer>(options);
    symbolizer->options = std::move(options);
    return STACKSYM_OK;
  });
}

stacksym_status stacksym_build_ids_symbolize(stacksym_build_ids* symbolizer,
                                             const stacksym_build_id_offset* pairs, size_t count,
                                             stacksym_symbolized_list** out) {
  return Guard([&] {
    if (!out) return MissingArgument("out");
    *out = nullptr;
    if (!symbolizer) return MissingArgument("symbolizer");
    if (!pairs && count > 0) return MissingArgument("pairs");
    std::vector<stacksym::SymbolizedAddress> answers;
    answers.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      if (!pairs[i].build_id && pairs[i].build_id_size > 0)
        return Fail(STACKSYM_ERROR_INVALID_ARGUMENT,
                    "pairs[" + std::to_string(i) + "].build_id is NULL");
      answers.push_back(symbolizer->symbolizer->Symbolize(
          std::span<const uint8_t>(pairs[i].build_id, pairs[i].build_id_size),
          pairs[i].file_offset));
    }
    *out = MakeList(std::move(answers));
    return STACKSYM_OK;
  });
}

}  // extern "C"
