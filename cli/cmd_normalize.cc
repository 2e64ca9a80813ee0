// `stacksym normalize --pid P [--no-build-ids] [--vma-source auto|ioctl|text] [--json] ADDR...`
// — each address of a live process as (build ID, file offset, path), or the reason it has
// none. Addresses come from the arguments or, when there are none, one per line on stdin.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/hex.h"
#include "command.h"
#include "stacksym/elf.h"
#include "stacksym/normalize.h"
#include "symbolize_output.h"

// Named for the file: the CLI compiles in unity batches (cli/CMakeLists.txt).
namespace stacksym::cli::cmd_normalize {
namespace {

struct Options {
  int pid = 0;
  bool no_build_ids = false;
  bool executable_only = false;
  bool json = false;
  std::string vma_source = "auto";
  std::vector<std::string> addresses;
};

void AppendHex(uint64_t v, std::string* out) {
  char buf[kHexU64Size];
  out->append(buf, WriteHexU64(v, buf));
}

void AppendText(uint64_t addr, const NormalizedAddress& a, const NormalizedBatch& batch,
                std::string* out) {
  AppendHex(addr, out);
  if (!a.ok()) {
    out->append(" ");
    out->append(ReasonName(a.reason));
    out->append(" (");
    out->append(ReasonText(a.reason));
    out->append(")\n");
    return;
  }
  const Module& m = batch.modules[a.module];
  out->append(" ");
  out->append(ModuleKindName(m.kind));
  out->append(" ");
  if (!m.build_id.empty()) {
    out->append(ToHex(m.build_id));
  } else if (m.build_id_reason) {
    out->append(ReasonName(*m.build_id_reason));
  } else {
    out->append("-");
  }
  out->append(" ");
  AppendHex(a.file_offset, out);
  out->append(" ");
  out->append(m.path.empty() ? "[anon]" : m.path);
  if (m.deleted) out->append(" (deleted)");
  out->append("\n");
}

void AppendJson(uint64_t addr, const NormalizedAddress& a, const NormalizedBatch& batch,
                std::string* out) {
  out->append("{\"address\":\"");
  AppendHex(addr, out);
  out->append("\"");
  if (!a.ok()) {
    out->append(",\"reason\":\"");
    out->append(ReasonName(a.reason));
    out->append("\",\"message\":");
    AppendJsonString(ReasonText(a.reason), out);
    out->append("}\n");
    return;
  }
  const Module& m = batch.modules[a.module];
  out->append(",\"kind\":\"");
  out->append(ModuleKindName(m.kind));
  out->append("\",\"path\":");
  AppendJsonString(m.path, out);
  out->append(",\"deleted\":");
  out->append(m.deleted ? "true" : "false");
  if (!m.build_id.empty()) {
    out->append(",\"build_id\":\"");
    out->append(ToHex(m.build_id));
    out->append("\"");
  } else if (m.build_id_reason) {
    out->append(",\"build_id_reason\":\"");
    out->append(ReasonName(*m.build_id_reason));
    out->append("\"");
  }
  out->append(",\"file_offset\":\"");
  AppendHex(a.file_offset, out);
  out->append("\"}\n");
}

int Run(const Options& opts) {
  std::optional<VmaSourceKind> source = ParseVmaSourceKind(opts.vma_source);
  if (!source) {
    std::fprintf(stderr, "stacksym normalize: --vma-source must be auto, ioctl or text\n");
    return kExitUsage;
  }
  std::vector<uint64_t> addrs;
  std::string error;
  if (!ReadAddresses(opts.addresses, &addrs, &error)) {
    std::fprintf(stderr, "stacksym normalize: %s\n", error.c_str());
    return kExitBadInput;
  }
  NormalizerOptions options;
  options.vma_source = *source;
  options.build_ids = !opts.no_build_ids;
  options.executable_only = opts.executable_only;
  Normalizer normalizer(options);
  Result<NormalizedBatch> batch = normalizer.Normalize(opts.pid, addrs);
  if (!batch) {
    std::fprintf(stderr, "stacksym normalize: %s\n", batch.error().ToString().c_str());
    return kExitBadInput;
  }
  std::string out;
  for (size_t i = 0; i < addrs.size(); ++i) {
    if (opts.json) {
      AppendJson(addrs[i], batch->addresses[i], *batch, &out);
    } else {
      AppendText(addrs[i], batch->addresses[i], *batch, &out);
    }
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

CommandRegistrar registrar(
    "normalize", "Normalize addresses of a live process to (build ID, file offset)",
    [](CLI::App& app) -> CommandRun {
      auto opts = std::make_shared<Options>();
      app.add_option("--pid", opts->pid, "process ID")->required();
      app.add_flag("--no-build-ids", opts->no_build_ids, "do not read build IDs");
      app.add_flag("--executable-only", opts->executable_only,
                   "only executable VMAs count (others are reported unmapped)");
      app.add_option("--vma-source", opts->vma_source,
                     "auto (PROCMAP_QUERY when available), ioctl or text (/proc/PID/maps)");
      app.add_flag("--json", opts->json, "JSON lines instead of text");
      app.add_option("ADDR", opts->addresses, "hex addresses (default: one per line on stdin)");
      return [opts] { return Run(*opts); };
    });

}  // namespace
}  // namespace stacksym::cli::cmd_normalize
