#include "remote/otlp_proxy.h"

#include <google/protobuf/arena.h>
#include <google/protobuf/stubs/logging.h>

#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "export/otlp_dictionary.h"
#include "otlp_profiles.pb.h"
#include "output/flame_tree.h"
#include "stacksym/hex.h"

namespace stacksym::remote {
namespace {

namespace pb = stacksym::otlp;

constexpr std::string_view kBuildIdKey = "process.executable.build_id.gnu";
constexpr std::string_view kFrameTypeKey = "profile.frame.type";

Error Malformed(std::string message) {
  return MakeError(ErrorCode::kMalformed, "OTLP request: " + std::move(message));
}

// The dictionary's attributes and strings as the proxy reads them, checked for range.
class DictionaryReader {
 public:
  explicit DictionaryReader(const pb::ProfilesDictionary& d) : d_(d) {}

  // The value of attribute `key` among `indices` as a string (string_value, or
  // string_value_strindex, or bytes_value as hex); nullopt when absent. Error for an index
  // out of range.
  Result<std::optional<std::string>> StringAttribute(
      const google::protobuf::RepeatedField<int32_t>& indices, std::string_view key) const {
    for (int32_t i : indices) {
      Result<std::optional<std::string>> value = Attribute(i, key);
      if (!value || *value) return value;
    }
    return std::optional<std::string>();
  }

  // The value of attribute `index` as a string when its key is `key`; nullopt otherwise.
  Result<std::optional<std::string>> Attribute(int32_t index, std::string_view key) const {
    if (index < 0 || index >= d_.attribute_table_size()) {
      return Malformed("attribute index " + std::to_string(index) + " out of range");
    }
    const pb::KeyValueAndUnit& a = d_.attribute_table(index);
    Result<std::string_view> name = String(a.key_strindex());
    if (!name) return name.error();
    if (*name != key) return std::optional<std::string>();
    const pb::AnyValue& v = a.value();
    if (v.has_string_value()) return std::optional<std::string>(v.string_value());
    if (v.has_string_value_strindex()) {
      Result<std::string_view> s = String(v.string_value_strindex());
      if (!s) return s.error();
      return std::optional<std::string>(std::string(*s));
    }
    if (v.has_bytes_value()) {
      const std::string& b = v.bytes_value();
      return std::optional<std::string>(
          ToHex({reinterpret_cast<const uint8_t*>(b.data()), b.size()}));
    }
    return std::optional<std::string>(std::string());
  }

  Result<std::string_view> String(int32_t index) const {
    if (index < 0 || index >= d_.string_table_size()) {
      return Malformed("string index " + std::to_string(index) + " out of range");
    }
    return std::string_view(d_.string_table(index));
  }

 private:
  const pb::ProfilesDictionary& d_;
};

// Each mapping's module in `batch` (-1: no GNU build ID, or not hex).
Result<std::vector<int64_t>> MappingModules(const pb::ProfilesDictionary& d, FrameBatch& batch) {
  DictionaryReader reader(d);
  std::vector<int64_t> out(d.mapping_table_size(), -1);
  for (int i = 1; i < d.mapping_table_size(); ++i) {
    Result<std::optional<std::string>> hex =
        reader.StringAttribute(d.mapping_table(i).attribute_indices(), kBuildIdKey);
    if (!hex) return hex.error();
    if (!*hex) continue;
    std::optional<std::vector<uint8_t>> bytes = FromHex(**hex);
    if (bytes && bytes->size() >= 2 && bytes->size() <= 64) out[i] = batch.ModuleOf(*bytes);
  }
  return out;
}

// Whether each attribute of the table is a profile.frame.type other than "native" (a kernel
// or interpreter frame: not an ELF address).
Result<std::vector<bool>> NotNativeAttributes(const pb::ProfilesDictionary& d) {
  DictionaryReader reader(d);
  std::vector<bool> out(d.attribute_table_size(), false);
  for (int i = 1; i < d.attribute_table_size(); ++i) {
    Result<std::optional<std::string>> type = reader.Attribute(i, kFrameTypeKey);
    if (!type) return type.error();
    out[i] = type->has_value() && **type != "native";
  }
  return out;
}

// The locations to name (index and frame), added to `batch`.
Result<std::vector<std::pair<int, FrameRef>>> CollectLocations(const pb::ProfilesDictionary& d,
                                                               FrameBatch& batch) {
  Result<std::vector<int64_t>> modules = MappingModules(d, batch);
  if (!modules) return modules.error();
  Result<std::vector<bool>> not_native = NotNativeAttributes(d);
  if (!not_native) return not_native.error();
  std::vector<std::pair<int, FrameRef>> out;
  for (int i = 1; i < d.location_table_size(); ++i) {
    const pb::Location& loc = d.location_table(i);
    int32_t mapping = loc.mapping_index();
    if (mapping < 0 || mapping >= d.mapping_table_size()) {
      return Malformed("location " + std::to_string(i) + ": mapping index " +
                       std::to_string(mapping) + " out of range");
    }
    bool skip = loc.lines_size() > 0 || (*modules)[mapping] < 0;
    for (int32_t a : loc.attribute_indices()) {
      if (a < 0 || a >= d.attribute_table_size()) {
        return Malformed("location " + std::to_string(i) + ": attribute index " +
                         std::to_string(a) + " out of range");
      }
      skip = skip || (*not_native)[a];  // kernel, interpreters: not ELF addresses
    }
    if (skip) continue;
    out.emplace_back(i, batch.Add(static_cast<uint32_t>((*modules)[mapping]), loc.address()));
  }
  return out;
}

// Lines for the locations named in `batch`, their Functions added through `writer` once per
// distinct frame.
bool AddLines(pb::ProfilesDictionary* d, const std::vector<std::pair<int, FrameRef>>& locations,
              const FrameBatch& batch, ProxyTally* tally) {
  std::optional<OtlpDictionaryWriter> writer;  // made when the first name is added
  std::vector<std::vector<int32_t>> functions(batch.distinct());  // by FrameRef::id
  for (const auto& [index, ref] : locations) {
    batch.Count(ref, tally);
    const FrameSymbols* symbols = batch.Answer(ref);
    if (symbols == nullptr) continue;
    if (!writer) writer.emplace(OtlpDictionaryWriter::Adopt(d));
    std::vector<int32_t>& fns = functions[ref.id];
    if (fns.empty()) {
      for (const SourceFrame& line : symbols->lines)
        fns.push_back(writer->Function(line, /*python=*/false));
    }
    pb::Location* loc = d->mutable_location_table(index);
    for (size_t k = 0; k < symbols->lines.size(); ++k) {  // innermost first, as OTLP wants
      pb::Line* out = loc->add_lines();
      out->set_function_index(fns[k]);
      out->set_line(symbols->lines[k].line);
      out->set_column(symbols->lines[k].column);
    }
  }
  return writer.has_value();
}

}  // namespace

Result<std::string> SymbolizeOtlpRequest(std::string_view body, SymbolService& service,
                                         std::chrono::steady_clock::time_point deadline,
                                         ProxyTally* tally) {
  // On an arena: a request of tens of thousands of locations is freed at once.
  google::protobuf::Arena arena;
  auto* request = google::protobuf::Arena::CreateMessage<pb::ExportProfilesServiceRequest>(&arena);
  // Bad input is reported through the Error, not by protobuf logging to stderr.
  google::protobuf::LogSilencer quiet;
  if (body.size() > static_cast<size_t>(std::numeric_limits<int>::max()) ||
      !request->ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    return Malformed("not a protobuf ExportProfilesServiceRequest");
  }
  pb::ProfilesDictionary* d = request->mutable_dictionary();
  FrameBatch batch(AddressKind::kVirtual);
  Result<std::vector<std::pair<int, FrameRef>>> locations = CollectLocations(*d, batch);
  if (!locations) return locations.error();
  if (locations->empty()) return std::string(body);  // nothing to name: as it came
  batch.Resolve(service, deadline);
  tally->distinct += batch.distinct();
  if (!AddLines(d, *locations, batch, tally)) return std::string(body);  // as it came
  std::string out;
  if (!request->SerializeToString(&out)) {
    return MakeError(ErrorCode::kInternal, "OTLP request: protobuf serialization failed");
  }
  return out;
}

}  // namespace stacksym::remote
