#include "remote/pyroscope_proxy.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/stubs/logging.h>

#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "output/gzip.h"
#include "output/pprof_dictionary.h"
#include "profile.pb.h"
#include "pyroscope_push.pb.h"
#include "stacksym/hex.h"

namespace stacksym::remote {
namespace {

namespace pprof = perftools::profiles;

Error Malformed(std::string message) {
  return MakeError(ErrorCode::kMalformed, "Push request: " + std::move(message));
}

// One raw_profile, decoded, and the locations of it to name.
struct RawProfile {
  pyroscope::RawSample* sample = nullptr;  // where it goes back
  bool gzipped = false;
  pprof::Profile* profile = nullptr;                // on the request's arena
  std::vector<std::pair<int, FrameRef>> locations;  // location position, frame
};

// The module in `batch` of each user mapping with a build ID, by mapping id.
Result<std::unordered_map<uint64_t, uint32_t>> MappingModules(const pprof::Profile& p,
                                                              FrameBatch& batch) {
  std::unordered_map<uint64_t, uint32_t> out;
  auto str = [&](int64_t i) -> const std::string* {
    return i >= 0 && i < p.string_table_size() ? &p.string_table(static_cast<int>(i)) : nullptr;
  };
  for (const pprof::Mapping& m : p.mapping()) {
    const std::string* path = str(m.filename());
    const std::string* id = str(m.build_id());
    if (path == nullptr || id == nullptr) return Malformed("mapping string index out of range");
    if (path->empty() || (*path)[0] == '[' || id->empty()) continue;
    std::optional<std::vector<uint8_t>> bytes = FromHex(*id);
    if (bytes && bytes->size() >= 2 && bytes->size() <= 64) out[m.id()] = batch.ModuleOf(*bytes);
  }
  return out;
}

// Inflates (within *budget bytes, which it uses up) and parses one raw_profile.
Result<void> Decode(pyroscope::RawSample* sample, size_t* budget, google::protobuf::Arena* arena,
                    RawProfile* out) {
  const std::string& raw = sample->raw_profile();
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(raw.data()), raw.size());
  out->sample = sample;
  out->profile = google::protobuf::Arena::CreateMessage<pprof::Profile>(arena);
  out->gzipped = output::IsGzip(bytes);
  std::string inflated;
  if (out->gzipped) {
    Result<std::string> r = output::GzipDecompress(bytes, *budget);
    if (!r) return Malformed("raw_profile: " + r.error().message);
    inflated = *std::move(r);
    *budget -= inflated.size();
  }
  const std::string& data = out->gzipped ? inflated : raw;
  if (data.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !out->profile->ParseFromArray(data.data(), static_cast<int>(data.size()))) {
    return Malformed("raw_profile is not a pprof profile");
  }
  return {};
}

// The locations of `raw` to name, added to `batch`.
Result<void> Collect(RawProfile& raw, FrameBatch& batch) {
  Result<std::unordered_map<uint64_t, uint32_t>> modules = MappingModules(*raw.profile, batch);
  if (!modules) return modules.error();
  std::unordered_map<uint64_t, const pprof::Mapping*> mappings;
  for (const pprof::Mapping& m : raw.profile->mapping()) mappings[m.id()] = &m;
  for (int i = 0; i < raw.profile->location_size(); ++i) {
    const pprof::Location& loc = raw.profile->location(i);
    if (loc.line_size() > 0) continue;
    auto module = modules->find(loc.mapping_id());
    if (module == modules->end()) continue;
    const pprof::Mapping& m = *mappings[loc.mapping_id()];
    // Wraps for an address below memory_start, as the pprof reader reads it: then no segment
    // holds it, and it stays unnamed.
    uint64_t offset = loc.address() - m.memory_start() + m.file_offset();
    raw.locations.emplace_back(i, batch.Add(module->second, offset));
  }
  return {};
}

// Adds the names to `raw`, each distinct frame's Functions once; false when none was added.
bool Apply(RawProfile& raw, const FrameBatch& batch, ProxyTally* tally) {
  std::optional<PprofDictionaryWriter> writer;  // made when the first name is added
  std::unordered_map<uint64_t, bool> complete;  // mapping id → every location named
  std::unordered_map<uint32_t, std::vector<uint64_t>> functions;  // by FrameRef::id
  for (const auto& [index, ref] : raw.locations) {
    batch.Count(ref, tally);
    pprof::Location* loc = raw.profile->mutable_location(index);
    const FrameSymbols* symbols = batch.Answer(ref);
    complete.try_emplace(loc->mapping_id(), true).first->second &= symbols != nullptr;
    if (symbols == nullptr) continue;
    if (!writer) writer.emplace(PprofDictionaryWriter::Adopt(raw.profile));
    std::vector<uint64_t>& fns = functions[ref.id];
    if (fns.empty()) {
      for (const SourceFrame& line : symbols->lines)
        fns.push_back(writer->Function(line, /*python=*/false));
    }
    for (size_t k = 0; k < symbols->lines.size(); ++k) {  // innermost first, as pprof wants
      pprof::Line* out = loc->add_line();
      out->set_function_id(fns[k]);
      out->set_line(symbols->lines[k].line);
      out->set_column(symbols->lines[k].column);
    }
  }
  if (!writer) return false;
  for (pprof::Mapping& m : *raw.profile->mutable_mapping()) {
    auto it = complete.find(m.id());
    if (it == complete.end() || !it->second) continue;
    m.set_has_functions(true);
    m.set_has_filenames(true);
    m.set_has_line_numbers(true);
    m.set_has_inline_frames(true);
  }
  return true;
}

Result<void> Encode(RawProfile& raw) {
  std::string data;
  if (!raw.profile->SerializeToString(&data)) {
    return MakeError(ErrorCode::kInternal, "Push request: pprof serialization failed");
  }
  if (!raw.gzipped) {
    raw.sample->set_raw_profile(std::move(data));
    return {};
  }
  Result<std::string> gz = output::GzipCompress(data);
  if (!gz) return gz.error();
  raw.sample->set_raw_profile(*std::move(gz));
  return {};
}

}  // namespace

Result<std::string> SymbolizePushRequest(std::string_view body, SymbolService& service,
                                         std::chrono::steady_clock::time_point deadline,
                                         size_t max_profile_bytes, ProxyTally* tally) {
  // On an arena, with every raw_profile decoded: freed at once.
  google::protobuf::Arena arena;
  auto* request = google::protobuf::Arena::CreateMessage<pyroscope::PushRequest>(&arena);
  // Bad input is reported through the Error, not by protobuf logging to stderr.
  google::protobuf::LogSilencer quiet;
  if (body.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !request->ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    return Malformed("not a protobuf PushRequest");
  }
  std::vector<std::unique_ptr<RawProfile>> profiles;
  FrameBatch batch(AddressKind::kFileOffset);
  size_t budget = max_profile_bytes;
  for (pyroscope::RawProfileSeries& series : *request->mutable_series()) {
    for (pyroscope::RawSample& sample : *series.mutable_samples()) {
      auto raw = std::make_unique<RawProfile>();
      if (Result<void> r = Decode(&sample, &budget, &arena, raw.get()); !r) return r.error();
      if (Result<void> r = Collect(*raw, batch); !r) return r.error();
      if (!raw->locations.empty()) profiles.push_back(std::move(raw));
    }
  }
  if (profiles.empty()) return std::string(body);  // nothing to name: as it came
  batch.Resolve(service, deadline);
  tally->distinct += batch.distinct();
  bool any = false;
  for (std::unique_ptr<RawProfile>& raw : profiles) {
    if (!Apply(*raw, batch, tally)) continue;  // nothing named: its bytes as they came
    if (Result<void> r = Encode(*raw); !r) return r.error();
    any = true;
  }
  if (!any) return std::string(body);  // nothing named: as it came
  std::string out;
  if (!request->SerializeToString(&out)) {
    return MakeError(ErrorCode::kInternal, "Push request: protobuf serialization failed");
  }
  return out;
}

}  // namespace stacksym::remote
