// The C handle around Normalizer and the C view of a NormalizedBatch.
#include "stacksym/normalize.h"

#include <memory>
#include <span>
#include <type_traits>
#include <vector>

#include "capi_internal.h"

struct stacksym_normalizer {
  std::unique_ptr<stacksym::Normalizer> normalizer;
};

namespace {

using stacksym::capi::Fail;
using stacksym::capi::Guard;
using stacksym::capi::MissingArgument;
using stacksym::capi::ToC;

struct Owned {
  stacksym::NormalizedBatch batch;
  std::vector<stacksym_normalized_address> addresses;
  std::vector<stacksym_module> modules;
};

// Standard layout with `view` first, so the pointer handed out converts back to the storage.
struct NormalizedStorage {
  stacksym_normalized view{};
  Owned* owned = nullptr;
  ~NormalizedStorage() { delete owned; }
};
static_assert(std::is_standard_layout_v<NormalizedStorage>);

stacksym_module_kind ToC(stacksym::ModuleKind kind) {
  switch (kind) {
    case stacksym::ModuleKind::kElf:
      return STACKSYM_MODULE_ELF;
    case stacksym::ModuleKind::kVdso:
      return STACKSYM_MODULE_VDSO;
    case stacksym::ModuleKind::kAnonymous:
      return STACKSYM_MODULE_ANONYMOUS;
    case stacksym::ModuleKind::kKernel:
      return STACKSYM_MODULE_KERNEL;
    case stacksym::ModuleKind::kUnknown:
      break;
  }
  return STACKSYM_MODULE_UNKNOWN;
}

stacksym_normalized* MakeView(stacksym::NormalizedBatch batch) {
  auto storage = std::make_unique<NormalizedStorage>();
  storage->owned = new Owned;
  Owned* owned = storage->owned;
  owned->batch = std::move(batch);
  for (const stacksym::Module& m : owned->batch.modules) {
    stacksym_module c{};
    c.kind = ToC(m.kind);
    c.path = m.path.c_str();
    c.deleted = m.deleted ? 1 : 0;
    c.build_id = m.build_id.empty() ? nullptr : m.build_id.data();
    c.build_id_size = m.build_id.size();
    c.build_id_reason = m.build_id_reason ? ToC(*m.build_id_reason) : STACKSYM_REASON_NONE;
    c.map_start = m.map_start;
    c.map_end = m.map_end;
    c.map_offset = m.map_offset;
    owned->modules.push_back(c);
  }
  for (const stacksym::NormalizedAddress& a : owned->batch.addresses) {
    stacksym_normalized_address c{};
    c.file_offset = a.ok() ? a.file_offset : 0;
    c.module = a.module;
    c.reason = a.ok() ? STACKSYM_REASON_NONE : ToC(a.reason);
    owned->addresses.push_back(c);
  }
  storage->view.pid = owned->batch.pid;
  storage->view.addresses = owned->addresses.empty() ? nullptr : owned->addresses.data();
  storage->view.address_count = owned->addresses.size();
  storage->view.modules = owned->modules.empty() ? nullptr : owned->modules.data();
  storage->view.module_count = owned->modules.size();
  return &storage.release()->view;
}

}  // namespace

extern "C" {

stacksym_status stacksym_normalizer_new(int build_ids, stacksym_normalizer** out) {
  return Guard([&] {
    if (!out) return MissingArgument("out");
    *out = nullptr;
    stacksym::NormalizerOptions options;
    options.build_ids = build_ids != 0;
    auto normalizer = std::make_unique<stacksym_normalizer>();
    normalizer->normalizer = std::make_unique<stacksym::Normalizer>(options);
    *out = normalizer.release();
    return STACKSYM_OK;
  });
}

void stacksym_normalizer_free(stacksym_normalizer* normalizer) { delete normalizer; }

stacksym_status stacksym_normalize(stacksym_normalizer* normalizer, pid_t pid,
                                   const uint64_t* addresses, size_t count,
                                   stacksym_normalized** out) {
  return Guard([&] {
    if (!out) return MissingArgument("out");
    *out = nullptr;
    if (!normalizer) return MissingArgument("normalizer");
    if (!addresses && count > 0) return MissingArgument("addresses");
    auto batch =
        normalizer->normalizer->Normalize(pid, std::span<const uint64_t>(addresses, count));
    if (!batch) return Fail(batch.error());
    *out = MakeView(std::move(*batch));
    return STACKSYM_OK;
  });
}

void stacksym_normalized_free(stacksym_normalized* normalized) {
  delete reinterpret_cast<NormalizedStorage*>(normalized);
}

}  // extern "C"
