// Pyroscope's Push API: one window as PushRequests of gzipped pprof, one series per process and
// profile type (process_cpu, off_cpu), each profile the pprof `record` writes (EncodePprof) of
// that process's stacks of that type. A series bigger than Pyroscope's per-profile limits
// (uncompressed bytes, samples) is cut into several profiles, sent in successive requests: the
// k-th request carries every series' k-th part, so no request holds two parts of one series.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "export/process_labels.h"
#include "output/flame_tree.h"
#include "output/gzip.h"
#include "pyroscope_push.pb.h"
#include "stacksym/export.h"
#include "stacksym/output.h"

namespace stacksym {
namespace {

namespace pb = stacksym::pyroscope;

// Pyroscope's default -validation.max-length-label-value.
constexpr size_t kMaxLabelValueBytes = 2048;

// A label value within Pyroscope's length limit, cut at a UTF-8 character boundary.
std::string LabelValue(std::string_view value) {
  if (value.size() > kMaxLabelValueBytes) {
    size_t end = kMaxLabelValueBytes;
    while (end > 0 && (static_cast<uint8_t>(value[end]) & 0xC0) == 0x80) --end;
    value = value.substr(0, end);
  }
  return output::ToValidUtf8(value);
}

// One series' profiles: its labels and the gzipped pprof of each part.
struct Series {
  std::vector<std::pair<std::string, std::string>> labels;  // sorted by name
  std::vector<std::string> parts;
  std::vector<uint64_t> part_samples;  // samples and off-CPU intervals of each part
};

class PyroscopeExporter : public Exporter {
 public:
  explicit PyroscopeExporter(const PyroscopeExportOptions& options) : options_(options) {}
  std::string_view name() const override { return "pyroscope"; }
  Result<std::vector<ExportRequest>> Encode(const ExportWindow& window) override;

 private:
  std::vector<std::pair<std::string, std::string>> Labels(const ExportWindow& window, uint32_t pid,
                                                          std::string_view comm,
                                                          bool off_cpu) const;
  Result<void> EncodeParts(const ExportWindow& window, std::span<const uint32_t> stacks,
                           bool off_cpu, Series* series) const;

  PyroscopeExportOptions options_;
};

// __name__, service_name, __delta__ and the process's labels (the OTel resource attributes'
// names with '_' for '.', as Pyroscope's own OTLP ingestion names them), at most max_labels of
// them (the optional ones go first), sorted by name as Pyroscope keeps them.
std::vector<std::pair<std::string, std::string>> PyroscopeExporter::Labels(
    const ExportWindow& window, uint32_t pid, std::string_view comm, bool off_cpu) const {
  ProfileProcess process = exporter::ProcessOf(window.profile, pid);
  std::vector<std::pair<std::string, std::string>> labels = {
      {"__name__", off_cpu ? "off_cpu" : "process_cpu"},
      {"service_name", LabelValue(exporter::ServiceName(window, process, comm))},
      {"__delta__", "false"},
      {"process_pid", std::to_string(pid)},
  };
  auto optional = [&](const char* name, std::string_view value) {
    if (!value.empty()) labels.emplace_back(name, LabelValue(value));
  };
  optional("process_executable_path", process.executable);
  optional("process_executable_name", exporter::ExecutableName(process));
  optional("container_id", process.container_id);
  optional("host_name", window.host_name);
  if (labels.size() > options_.max_labels) labels.resize(std::max<size_t>(options_.max_labels, 3));
  std::sort(labels.begin(), labels.end());
  return labels;
}

// The stacks as one pprof, or as several when one would pass the sample or byte limit.
Result<void> PyroscopeExporter::EncodeParts(const ExportWindow& window,
                                            std::span<const uint32_t> stacks, bool off_cpu,
                                            Series* series) const {
  const Profile& profile = window.profile;
  if (stacks.size() > options_.max_samples && options_.max_samples > 0) {
    for (size_t begin = 0; begin < stacks.size(); begin += options_.max_samples) {
      size_t size = std::min<size_t>(options_.max_samples, stacks.size() - begin);
      if (Result<void> r = EncodeParts(window, stacks.subspan(begin, size), off_cpu, series); !r) {
        return r;
      }
    }
    return {};
  }
  Profile part = FilterProfileStacks(profile, stacks);
  part.start_time_ns = window.start_ns;
  part.duration_ns = window.end_ns > window.start_ns ? window.end_ns - window.start_ns : 0;
  if (!off_cpu) {  // process_cpu: the CPU sample types alone
    part.off_cpu_ns.clear();
    part.off_cpu_recorded = false;
  }
  Result<std::string> pprof = EncodePprof(part, /*gzip=*/false);
  if (!pprof) return std::move(pprof).error();
  if (pprof->size() > options_.max_profile_bytes && stacks.size() > 1) {
    size_t half = stacks.size() / 2;
    if (Result<void> r = EncodeParts(window, stacks.first(half), off_cpu, series); !r) return r;
    return EncodeParts(window, stacks.subspan(half), off_cpu, series);
  }
  Result<std::string> gzipped = output::GzipCompress(*pprof);
  if (!gzipped) return std::move(gzipped).error();
  uint64_t samples = 0;
  for (uint32_t s : stacks) {
    if (off_cpu) {
      samples +=
          s < profile.times.size() && !profile.times[s].empty() ? profile.times[s].size() : 1;
    } else {
      samples += profile.Value(s, SampleType::kSamples);
    }
  }
  series->parts.push_back(std::move(*gzipped));
  series->part_samples.push_back(samples);
  return {};
}

Result<std::vector<ExportRequest>> PyroscopeExporter::Encode(const ExportWindow& window) {
  const Profile& profile = window.profile;
  // Each process's stacks of each kind: pid → [CPU stacks, off-CPU stacks].
  std::map<uint32_t, std::pair<std::vector<uint32_t>, std::vector<uint32_t>>> by_process;
  for (size_t s = 0; s < profile.stacks.size(); ++s) {
    auto& [cpu, off] = by_process[profile.stacks[s].pid];
    if (profile.Value(s, SampleType::kSamples) != 0) cpu.push_back(static_cast<uint32_t>(s));
    if (profile.Value(s, SampleType::kOffCpu) != 0) off.push_back(static_cast<uint32_t>(s));
  }
  std::vector<Series> all;
  for (const auto& [pid, kinds] : by_process) {
    for (bool off_cpu : {false, true}) {
      const std::vector<uint32_t>& stacks = off_cpu ? kinds.second : kinds.first;
      if (stacks.empty()) continue;
      Series& series = all.emplace_back();
      series.labels = Labels(window, pid, profile.stacks[stacks.front()].comm, off_cpu);
      if (Result<void> r = EncodeParts(window, stacks, off_cpu, &series); !r) {
        return std::move(r).error();
      }
    }
  }
  size_t requests = 0;
  for (const Series& series : all) requests = std::max(requests, series.parts.size());
  std::vector<ExportRequest> out;
  for (size_t k = 0; k < requests; ++k) {
    pb::PushRequest push;
    uint64_t samples = 0;
    for (const Series& series : all) {
      if (k >= series.parts.size()) continue;
      pb::RawProfileSeries* raw = push.add_series();
      for (const auto& [name, value] : series.labels) {
        pb::LabelPair* label = raw->add_labels();
        label->set_name(name);
        label->set_value(value);
      }
      raw->add_samples()->set_raw_profile(series.parts[k]);
      samples += series.part_samples[k];
    }
    ExportRequest& r = out.emplace_back();
    r.path = "/push.v1.PusherService/Push";
    r.content_type = "application/proto";
    r.headers = {{"Connect-Protocol-Version", "1"}};
    if (!push.SerializeToString(&r.body)) {
      return MakeError(ErrorCode::kInternal, "pyroscope: protobuf serialization failed");
    }
    r.samples = samples;
  }
  return out;
}

}  // namespace

std::unique_ptr<Exporter> MakePyroscopeExporter(const PyroscopeExportOptions& options) {
  return std::make_unique<PyroscopeExporter>(options);
}

}  // namespace stacksym
