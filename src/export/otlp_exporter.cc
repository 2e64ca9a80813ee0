// OTLP profiles over HTTP (opentelemetry-proto v1.11.0, profiles.v1development): one window as
// ExportProfilesServiceRequests, split by process when one would pass max_request_bytes.
//
// The shape of a request (docs/wire-formats.md has the field numbers and the rules):
// - one ProfilesDictionary for the request; every table's entry 0 is the zero value;
// - one ResourceProfiles per process (service.name, process.*, container.id, host.name), with
//   one ScopeProfiles ("stacksym") holding one Profile per sample type: CPU samples
//   (samples/count), off-CPU time (off_cpu/nanoseconds) when the recording measured it;
// - one Sample per stack, with thread.name and thread.id (and an off-CPU stack's state);
// - Location.address is the ELF virtual address of a native frame, so that a store can
//   symbolize what the agent did not.
#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "export/htlhash.h"
#include "export/otlp_dictionary.h"
#include "export/process_labels.h"
#include "otlp_profiles.pb.h"
#include "output/flame_tree.h"
#include "output/gzip.h"
#include "stacksym/elf.h"
#include "stacksym/export.h"
#include "stacksym/hex.h"

namespace stacksym {
namespace {

namespace pb = stacksym::otlp;

constexpr char kScopeName[] = "stacksym";

// The window's stacks in process order, and which of them one request carries.
struct StackRange {
  size_t begin = 0;
  size_t end = 0;
};

// One request: the stacks order[range] of the window, grouped by process.
class RequestBuilder {
 public:
  RequestBuilder(const ExportWindow& window, const std::vector<uint32_t>& order)
      : window_(window),
        profile_(window.profile),
        order_(order),
        dictionary_(OtlpDictionaryWriter::Fresh(request_.mutable_dictionary())),
        location_of_frame_(profile_.frames.size(), 0),
        mapping_of_module_(profile_.modules.size() + 1, 0) {}

  pb::ExportProfilesServiceRequest& Build(StackRange range);
  uint64_t samples() const { return samples_; }

 private:
  void AddProcess(StackRange range);
  void SetResource(uint32_t pid, std::string_view thread_name, pb::Resource* resource);
  void AddProfile(StackRange range, bool off_cpu, pb::ScopeProfiles* scope);
  // A Profile's samples by identity (stack, attributes).
  using SampleIndex = std::map<std::pair<int32_t, std::vector<int32_t>>, pb::Sample*>;
  void AddSample(uint32_t s, bool off_cpu, bool timed, bool unit_values, SampleIndex* samples,
                 pb::Profile* out);
  bool Timed(StackRange range, bool off_cpu, bool* unit_values) const;
  int32_t Location(uint32_t frame);
  int32_t Mapping(uint32_t module_slot, const Module* module);
  void PlaceInMapping(int32_t mapping, uint64_t address, uint64_t file_offset);
  std::optional<uint64_t> VirtualAddress(const ProfileFrame& frame) const;

  const ExportWindow& window_;
  const Profile& profile_;
  const std::vector<uint32_t>& order_;
  pb::ExportProfilesServiceRequest request_;
  OtlpDictionaryWriter dictionary_;
  std::vector<int32_t> location_of_frame_;                        // 0: not in the dictionary yet
  std::unordered_map<std::string, int32_t> location_by_content_;  // serialized Location → index
  // Module i's mapping at slot i; kernel frames without a kernel module share the last slot.
  std::vector<int32_t> mapping_of_module_;
  std::vector<bool> mapping_placed_;  // by mapping index: its span has a first address
  uint64_t samples_ = 0;
};

pb::ExportProfilesServiceRequest& RequestBuilder::Build(StackRange range) {
  size_t begin = range.begin;
  while (begin < range.end) {
    uint32_t pid = profile_.stacks[order_[begin]].pid;
    size_t end = begin;
    while (end < range.end && profile_.stacks[order_[end]].pid == pid) ++end;
    AddProcess({begin, end});
    begin = end;
  }
  return request_;
}

void RequestBuilder::AddProcess(StackRange range) {
  const ProfileStack& first = profile_.stacks[order_[range.begin]];
  pb::ResourceProfiles* resource_profiles = request_.add_resource_profiles();
  SetResource(first.pid, first.comm, resource_profiles->mutable_resource());
  pb::ScopeProfiles* scope = resource_profiles->add_scope_profiles();
  scope->mutable_scope()->set_name(kScopeName);
  AddProfile(range, /*off_cpu=*/false, scope);
  if (profile_.has_off_cpu()) AddProfile(range, /*off_cpu=*/true, scope);
}

void RequestBuilder::SetResource(uint32_t pid, std::string_view thread_name,
                                 pb::Resource* resource) {
  ProfileProcess process = exporter::ProcessOf(profile_, pid);
  auto add_string = [&](const char* key, std::string_view value) {
    if (value.empty()) return;
    pb::KeyValue* kv = resource->add_attributes();
    kv->set_key(key);
    kv->mutable_value()->set_string_value(output::ToValidUtf8(value));
  };
  add_string("service.name", exporter::ServiceName(window_, process, thread_name));
  pb::KeyValue* pid_kv = resource->add_attributes();
  pid_kv->set_key("process.pid");
  pid_kv->mutable_value()->set_int_value(pid);
  add_string("process.executable.path", process.executable);
  add_string("process.executable.name", exporter::ExecutableName(process));
  add_string("container.id", process.container_id);
  add_string("host.name", window_.host_name);
}

// Whether every stack of the kind in `range` has its times, adding up to its value (then the
// samples carry timestamps), and whether each time's value is 1 (then CPU samples carry the
// timestamps alone, which means a value of 1 each). All samples of a Profile get one shape.
bool RequestBuilder::Timed(StackRange range, bool off_cpu, bool* unit_values) const {
  *unit_values = true;
  if (!profile_.keep_times) return false;
  for (size_t i = range.begin; i < range.end; ++i) {
    uint32_t s = order_[i];
    uint64_t value = profile_.Value(s, off_cpu ? SampleType::kOffCpu : SampleType::kSamples);
    if (value == 0) continue;
    if (s >= profile_.times.size()) return false;
    uint64_t sum = 0;
    for (const TimedValue& t : profile_.times[s]) {
      sum += t.value;
      *unit_values &= t.value == 1;
    }
    if (sum != value) return false;
  }
  return true;
}

void RequestBuilder::AddProfile(StackRange range, bool off_cpu, pb::ScopeProfiles* scope) {
  bool any = false;
  for (size_t i = range.begin; i < range.end && !any; ++i) {
    any = profile_.Value(order_[i], off_cpu ? SampleType::kOffCpu : SampleType::kSamples) != 0;
  }
  if (!any) return;
  pb::Profile* out = scope->add_profiles();
  pb::ValueType* sample_type = out->mutable_sample_type();
  sample_type->set_type_strindex(dictionary_.String(off_cpu ? "off_cpu" : "samples"));
  sample_type->set_unit_strindex(dictionary_.String(off_cpu ? "nanoseconds" : "count"));
  if (!off_cpu) {
    out->mutable_period_type()->set_type_strindex(dictionary_.String("cpu"));
    out->mutable_period_type()->set_unit_strindex(dictionary_.String("nanoseconds"));
    out->set_period(static_cast<int64_t>(profile_.period_ns));
  }
  out->set_time_unix_nano(window_.start_ns);
  out->set_duration_nano(window_.end_ns > window_.start_ns ? window_.end_ns - window_.start_ns : 0);
  bool unit_values = true;
  bool timed = Timed(range, off_cpu, &unit_values);
  SampleIndex samples;
  for (size_t i = range.begin; i < range.end; ++i) {
    AddSample(order_[i], off_cpu, timed, unit_values, &samples, out);
  }
}

// Stack s as a Sample of the CPU or off-CPU profile (none when it has no such value). Timed CPU
// samples whose values are all 1 carry timestamps alone; other timed samples pair values and
// timestamps; untimed ones carry their total.
void RequestBuilder::AddSample(uint32_t s, bool off_cpu, bool timed, bool unit_values,
                               SampleIndex* samples, pb::Profile* out) {
  const ProfileStack& stack = profile_.stacks[s];
  uint64_t value = profile_.Value(s, off_cpu ? SampleType::kOffCpu : SampleType::kSamples);
  if (value == 0) return;
  std::vector<int32_t> locations;
  locations.reserve(stack.frames.size());
  for (uint32_t frame : stack.frames) locations.push_back(Location(frame));
  std::vector<int32_t> attributes = {dictionary_.StringAttribute("thread.name", stack.comm),
                                     dictionary_.IntAttribute("thread.id", stack.tid)};
  if (off_cpu) {
    attributes.push_back(
        dictionary_.StringAttribute("stacksym.thread.state", ThreadStateName(stack.state)));
  }
  // Distinct stacks are distinct samples, but for frames that became equal locations (no file
  // to place them, no symbols): those samples share an identity and are combined, as the spec
  // asks, by appending their values and timestamps.
  auto [it, inserted] =
      samples->try_emplace({dictionary_.Stack(locations), std::move(attributes)}, nullptr);
  pb::Sample* sample = it->second;
  if (inserted) {
    sample = it->second = out->add_samples();
    sample->set_stack_index(it->first.first);
    for (int32_t a : it->first.second) sample->add_attribute_indices(a);
  }
  if (!timed) {
    if (sample->values_size() == 0) sample->add_values(0);
    uint64_t total = static_cast<uint64_t>(sample->values(0)) + value;
    sample->set_values(0, static_cast<int64_t>(std::min<uint64_t>(total, kMaxTotalSamples)));
    samples_ += off_cpu ? 1 : value;
    return;
  }
  for (const TimedValue& t : profile_.times[s]) {
    sample->add_timestamps_unix_nano(t.time_ns);
    if (off_cpu || !unit_values) sample->add_values(static_cast<int64_t>(t.value));
    samples_ += off_cpu ? 1 : t.value;
  }
}

// A user frame's address in its ELF file's virtual address space, through the PT_LOAD segment
// of the file the recorder kept; nullopt when no file was kept or no segment holds the offset.
std::optional<uint64_t> RequestBuilder::VirtualAddress(const ProfileFrame& frame) const {
  std::shared_ptr<ElfFile> file = profile_.files.Find(profile_.modules[frame.module]);
  if (!file) return std::nullopt;
  return file->FileOffsetToVaddr(frame.address);
}

int32_t RequestBuilder::Location(uint32_t frame_index) {
  int32_t& index = location_of_frame_[frame_index];
  if (index != 0) return index;
  const ProfileFrame& frame = profile_.frames[frame_index];
  pb::Location* location = dictionary_.out()->add_location_table();
  index = dictionary_.out()->location_table_size() - 1;
  bool in_module = frame.kind != FrameKind::kUserRaw && frame.module < profile_.modules.size();
  const Module* module = in_module ? &profile_.modules[frame.module] : nullptr;
  const char* type = "native";
  switch (frame.kind) {
    case FrameKind::kUser:
      if (module != nullptr) {
        location->set_mapping_index(Mapping(frame.module, module));
        // Without the file its virtual address is unknown: the address stays unset (0) rather
        // than a file offset a store would take for an address.
        if (module->IsJitCode()) {
          location->set_address(frame.address);  // JIT code: the process's own address
        } else if (std::optional<uint64_t> vaddr = VirtualAddress(frame)) {
          location->set_address(*vaddr);
          PlaceInMapping(location->mapping_index(), *vaddr, frame.address);
        }
      }
      break;
    case FrameKind::kUserRaw:
      location->set_address(frame.address);  // a virtual address in the process
      break;
    case FrameKind::kKernel:
      type = "kernel";
      if (module == nullptr || module->kind != ModuleKind::kKernel) {
        module = nullptr;
        location->set_mapping_index(Mapping(profile_.modules.size(), nullptr));
      } else {
        location->set_mapping_index(Mapping(frame.module, module));
      }
      location->set_address(frame.address);
      PlaceInMapping(location->mapping_index(), frame.address, 0);
      break;
    case FrameKind::kPython:
      type = "cpython";  // named at record time; [python] is no file, so no mapping
      break;
  }
  if (frame_index < profile_.symbols.size() && profile_.symbols[frame_index]) {
    bool python = frame.kind == FrameKind::kPython;
    for (const SourceFrame& line : profile_.symbols[frame_index]->lines) {  // callee first
      pb::Line* out = location->add_lines();
      out->set_function_index(dictionary_.Function(line, python));
      out->set_line(line.line);
      out->set_column(line.column);
    }
  }
  location->add_attribute_indices(dictionary_.StringAttribute("profile.frame.type", type));
  // Frames that end up as equal locations (no file to place them by, no symbols) share one:
  // the dictionary holds no duplicates, and their samples combine.
  auto [it, inserted] = location_by_content_.try_emplace(location->SerializeAsString(), index);
  if (!inserted) {
    dictionary_.out()->mutable_location_table()->RemoveLast();
    index = it->second;
  }
  return index;
}

// The mapping of module slot `slot` (module null: the synthetic "[kernel.kallsyms]"), with its
// build IDs; its span is filled as its locations are placed.
int32_t RequestBuilder::Mapping(uint32_t slot, const Module* module) {
  int32_t& index = mapping_of_module_[slot];
  if (index != 0) return index;
  pb::Mapping* mapping = dictionary_.out()->add_mapping_table();
  index = dictionary_.out()->mapping_table_size() - 1;
  mapping->set_filename_strindex(
      dictionary_.String(module != nullptr ? module->path : "[kernel.kallsyms]"));
  if (module != nullptr && !module->build_id.empty()) {
    mapping->add_attribute_indices(
        dictionary_.StringAttribute("process.executable.build_id.gnu", ToHex(module->build_id)));
  }
  if (module != nullptr && module->kind == ModuleKind::kElf) {
    if (std::shared_ptr<ElfFile> file = profile_.files.Find(*module)) {
      mapping->add_attribute_indices(dictionary_.StringAttribute(
          "process.executable.build_id.htlhash", exporter::HtlHash(file->bytes())));
    }
  }
  return index;
}

// Widens a mapping's span to hold `address`. A normalized profile keeps no load addresses, so
// the span is the one of the addresses given (ELF virtual addresses), and file_offset is the
// file offset of the lowest: address - memory_start + file_offset is then a file offset again
// for the addresses of that segment.
void RequestBuilder::PlaceInMapping(int32_t index, uint64_t address, uint64_t file_offset) {
  pb::Mapping* mapping = dictionary_.out()->mutable_mapping_table(index);
  if (mapping_placed_.size() <= static_cast<size_t>(index)) mapping_placed_.resize(index + 1);
  if (!mapping_placed_[index] || address < mapping->memory_start()) {
    mapping->set_memory_start(address);
    mapping->set_file_offset(file_offset);
  }
  if (address == std::numeric_limits<uint64_t>::max()) {
    mapping->set_memory_limit(address);
  } else {
    mapping->set_memory_limit(std::max(mapping->memory_limit(), address + 1));
  }
  mapping_placed_[index] = true;
}

// Every frame index and value is one the encoding can carry.
Result<void> CheckProfile(const Profile& profile) {
  for (size_t s = 0; s < profile.stacks.size(); ++s) {
    for (uint32_t frame : profile.stacks[s].frames) {
      if (frame >= profile.frames.size()) {
        return MakeError(ErrorCode::kInvalidArgument, "otlp: stack " + std::to_string(s) +
                                                          " refers to missing frame " +
                                                          std::to_string(frame));
      }
    }
    if (profile.Value(s, SampleType::kSamples) > kMaxTotalSamples ||
        profile.Value(s, SampleType::kOffCpu) > kMaxTotalSamples) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "otlp: stack " + std::to_string(s) + " has a value above 2^63-1");
    }
  }
  return {};
}

class OtlpExporter : public Exporter {
 public:
  explicit OtlpExporter(const OtlpExportOptions& options) : options_(options) {}
  std::string_view name() const override { return "otlp"; }
  // ExportProfilesServiceResponse.partial_success with rejected_profiles > 0, or an error
  // message (the specification's "warning" form).
  bool PartlyRejected(std::string_view body) const override {
    pb::ExportProfilesServiceResponse response;
    if (body.empty() || !response.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
      return false;
    }
    return response.has_partial_success() && (response.partial_success().rejected_profiles() > 0 ||
                                              !response.partial_success().error_message().empty());
  }
  Result<std::vector<ExportRequest>> Encode(const ExportWindow& window) override;

 private:
  Result<void> EncodeRange(const ExportWindow& window, const std::vector<uint32_t>& order,
                           StackRange range, std::vector<ExportRequest>* out);

  OtlpExportOptions options_;
};

// The stacks order[range] as one request, or, when that would pass max_request_bytes, as
// several: split between processes near the middle, or within a process's stacks when it is
// alone and still too big (a single stack too big goes alone).
Result<void> OtlpExporter::EncodeRange(const ExportWindow& window,
                                       const std::vector<uint32_t>& order, StackRange range,
                                       std::vector<ExportRequest>* out) {
  auto builder = std::make_unique<RequestBuilder>(window, order);
  pb::ExportProfilesServiceRequest& request = builder->Build(range);
  if (request.ByteSizeLong() > options_.max_request_bytes && range.end - range.begin > 1) {
    builder.reset();  // the parts are built one at a time
    const Profile& p = window.profile;
    size_t middle = range.begin + (range.end - range.begin) / 2;
    // The process boundary nearest the middle, if the range holds more than one process.
    size_t split = middle;
    uint32_t pid = p.stacks[order[middle]].pid;
    size_t down = middle, up = middle;
    while (down > range.begin && p.stacks[order[down - 1]].pid == pid) --down;
    while (up < range.end && p.stacks[order[up]].pid == pid) ++up;
    if (down > range.begin || up < range.end) {
      split = (down > range.begin && (middle - down <= up - middle || up == range.end)) ? down : up;
    }
    if (Result<void> r = EncodeRange(window, order, {range.begin, split}, out); !r) return r;
    return EncodeRange(window, order, {split, range.end}, out);
  }
  std::string body;
  if (!request.SerializeToString(&body)) {
    return MakeError(ErrorCode::kInternal, "otlp: protobuf serialization failed");
  }
  Result<std::string> gzipped = output::GzipCompress(body);
  if (!gzipped) return std::move(gzipped).error();
  ExportRequest& r = out->emplace_back();
  r.path = "/v1development/profiles";
  r.content_type = "application/x-protobuf";
  r.headers = {{"Content-Encoding", "gzip"}};
  r.body = std::move(*gzipped);
  r.samples = builder->samples();
  return {};
}

Result<std::vector<ExportRequest>> OtlpExporter::Encode(const ExportWindow& window) {
  const Profile& profile = window.profile;
  if (Result<void> ok = CheckProfile(profile); !ok) return std::move(ok).error();
  std::vector<uint32_t> order;
  for (size_t s = 0; s < profile.stacks.size(); ++s) {
    if (profile.Value(s, SampleType::kSamples) != 0 || profile.Value(s, SampleType::kOffCpu) != 0) {
      order.push_back(static_cast<uint32_t>(s));
    }
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return profile.stacks[a].pid < profile.stacks[b].pid;
  });
  std::vector<ExportRequest> requests;
  if (order.empty()) return requests;  // nothing sampled: nothing to send
  if (Result<void> r = EncodeRange(window, order, {0, order.size()}, &requests); !r) {
    return std::move(r).error();
  }
  return requests;
}

}  // namespace

std::unique_ptr<Exporter> MakeOtlpExporter(const OtlpExportOptions& options) {
  return std::make_unique<OtlpExporter>(options);
}

}  // namespace stacksym
