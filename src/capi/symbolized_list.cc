// The C view of symbolized answers: one allocation that owns the C++ answers and the C
// structs pointing into them.
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "capi_internal.h"

namespace stacksym::capi {
namespace {

struct Owned {
  std::vector<SymbolizedAddress> answers;
  std::vector<stacksym_symbolized> items;
  std::vector<stacksym_frame> frames;
  std::vector<const SourceFrame*> sources;  // per frame: the C++ frame it shows
};

// Standard layout with `list` first, so the pointer handed out converts back to the storage.
struct ListStorage {
  stacksym_symbolized_list list{};
  Owned* owned = nullptr;
  ~ListStorage() { delete owned; }
};
static_assert(std::is_standard_layout_v<ListStorage>);

// The C++ frame behind `frame` of `list`, or null.
const SourceFrame* SourceOf(const stacksym_symbolized_list* list, const stacksym_frame* frame) {
  if (list == nullptr || frame == nullptr) return nullptr;
  const Owned* owned = reinterpret_cast<const ListStorage*>(list)->owned;
  // Compared as addresses: a pointer into another array is not "before" this one.
  auto at = reinterpret_cast<uintptr_t>(frame);
  auto begin = reinterpret_cast<uintptr_t>(owned->frames.data());
  if (at < begin || (at - begin) % sizeof(stacksym_frame) != 0) return nullptr;
  size_t index = (at - begin) / sizeof(stacksym_frame);
  return index < owned->sources.size() ? owned->sources[index] : nullptr;
}

}  // namespace

SymbolizeOptions FromC(const stacksym_options* options) {
  SymbolizeOptions out;
  if (!options) return out;
  out.demangle = options->demangle != 0;
  out.use_debug_info = options->debug_info != 0;
  out.inlines = options->inlines != 0;
  if (options->debug_dirs && options->debug_dir_count > 0) {
    out.debug_dirs.clear();
    for (size_t i = 0; i < options->debug_dir_count; ++i) {
      if (options->debug_dirs[i]) out.debug_dirs.emplace_back(options->debug_dirs[i]);
    }
  }
  out.threads = options->threads;
  return out;
}

stacksym_symbolized_list* MakeList(std::vector<SymbolizedAddress> answers) {
  auto storage = std::make_unique<ListStorage>();
  storage->owned = new Owned;
  Owned* owned = storage->owned;
  owned->answers = std::move(answers);
  size_t frame_count = 0;
  for (const SymbolizedAddress& a : owned->answers) frame_count += a.frames.size();
  owned->frames.reserve(frame_count);  // no reallocation: items point into it
  owned->sources.reserve(frame_count);
  owned->items.reserve(owned->answers.size());
  for (const SymbolizedAddress& a : owned->answers) {
    stacksym_symbolized item{};
    item.input = a.input;
    item.vaddr = a.vaddr;
    item.reason = a.reason ? ToC(*a.reason) : STACKSYM_REASON_NONE;
    item.symbol = a.symbol.c_str();
    item.raw_symbol = a.raw_symbol.c_str();
    item.symbol_address = a.symbol_address;
    item.symbol_size = a.symbol_size;
    item.offset = a.offset;
    item.frames = owned->frames.data() + owned->frames.size();
    item.frame_count = a.frames.size();
    for (const SourceFrame& f : a.frames) {
      stacksym_frame frame{};
      frame.function = f.function.c_str();
      frame.raw_function = f.raw_function.c_str();
      frame.file = f.file.empty() ? nullptr : f.file.c_str();
      frame.line = f.line;
      frame.column = f.column;
      frame.inlined = f.inlined ? 1 : 0;
      owned->frames.push_back(frame);
      owned->sources.push_back(&f);
    }
    if (item.frame_count == 0) item.frames = nullptr;
    item.module = a.module.c_str();
    owned->items.push_back(item);
  }
  storage->list.items = owned->items.empty() ? nullptr : owned->items.data();
  storage->list.count = owned->items.size();
  return &storage.release()->list;
}

}  // namespace stacksym::capi

extern "C" {

void stacksym_symbolized_list_free(stacksym_symbolized_list* list) {
  delete reinterpret_cast<stacksym::capi::ListStorage*>(list);
}

const char* stacksym_frame_start_file(const stacksym_symbolized_list* list,
                                      const stacksym_frame* frame) {
  const stacksym::SourceFrame* f = stacksym::capi::SourceOf(list, frame);
  return f == nullptr || f->start_file.empty() ? nullptr : f->start_file.c_str();
}

uint32_t stacksym_frame_start_line(const stacksym_symbolized_list* list,
                                   const stacksym_frame* frame) {
  const stacksym::SourceFrame* f = stacksym::capi::SourceOf(list, frame);
  return f == nullptr ? 0 : f->start_line;
}

uint32_t stacksym_frame_discriminator(const stacksym_symbolized_list* list,
                                      const stacksym_frame* frame) {
  const stacksym::SourceFrame* f = stacksym::capi::SourceOf(list, frame);
  return f == nullptr ? 0 : f->discriminator;
}

}  // extern "C"
