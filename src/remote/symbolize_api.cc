#include "remote/symbolize_api.h"

#include <initializer_list>

#include "remote/json.h"
#include "stacksym/elf.h"

namespace stacksym::remote {
namespace {

constexpr size_t kMinBuildIdBytes = 2;
constexpr size_t kMaxBuildIdBytes = 64;

Error Invalid(std::string message) {
  return MakeError(ErrorCode::kInvalidArgument, std::move(message));
}

// An error naming the first member of `object` that is not in `allowed`; ok otherwise.
Result<void> OnlyFields(const JsonValue& object, std::string_view where,
                        std::initializer_list<std::string_view> allowed) {
  for (const auto& [key, value] : object.object()) {
    bool known = false;
    for (std::string_view a : allowed) known = known || key == a;
    if (!known) return Invalid("unknown field \"" + key + "\" in " + std::string(where));
  }
  return {};
}

Result<std::vector<uint8_t>> BuildIdField(const JsonValue& object, std::string_view where) {
  const JsonValue* id = object.Find("build_id");
  if (id == nullptr || !id->is_string()) {
    return Invalid(std::string(where) + ": \"build_id\" must be a hex string");
  }
  std::optional<std::vector<uint8_t>> bytes = FromHex(id->string());
  if (!bytes || bytes->size() < kMinBuildIdBytes || bytes->size() > kMaxBuildIdBytes) {
    return Invalid(std::string(where) + ": invalid build ID \"" + id->string().substr(0, 160) +
                   "\" (expected 4 to 128 hex digits, an even number)");
  }
  return *std::move(bytes);
}

Result<uint32_t> SmallUint(const JsonValue* v, std::string_view what) {
  if (v == nullptr) return uint32_t{0};
  if (!v->is_uint64() || v->uint64() > UINT32_MAX) {
    return Invalid("\"" + std::string(what) + "\" must be an integer below 2^32");
  }
  return static_cast<uint32_t>(v->uint64());
}

Result<std::string> StringField(const JsonValue& object, std::string_view key) {
  const JsonValue* v = object.Find(key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return Invalid("\"" + std::string(key) + "\" must be a string");
  return v->string();
}

Result<FrameSymbols> ParseAnswer(const JsonValue& a) {
  if (!a.is_object()) return Invalid("an answer must be an object");
  if (Result<void> r = OnlyFields(a, "an answer", {"offset", "frames", "reason"}); !r) {
    return r.error();
  }
  FrameSymbols out;
  if (const JsonValue* reason = a.Find("reason")) {
    if (!reason->is_string()) return Invalid("\"reason\" must be a string");
    out.reason = ReasonFromName(reason->string());
    if (!out.reason) return Invalid("unknown reason \"" + reason->string().substr(0, 64) + "\"");
  }
  if (const JsonValue* frames = a.Find("frames")) {
    if (!frames->is_array()) return Invalid("\"frames\" must be an array");
    for (const JsonValue& f : frames->array()) {
      if (!f.is_object()) return Invalid("a frame must be an object");
      if (Result<void> r = OnlyFields(
              f, "a frame", {"function", "raw_function", "file", "line", "column", "inlined"});
          !r) {
        return r.error();
      }
      SourceFrame frame;
      Result<std::string> function = StringField(f, "function");
      Result<std::string> raw = StringField(f, "raw_function");
      Result<std::string> file = StringField(f, "file");
      Result<uint32_t> line = SmallUint(f.Find("line"), "line");
      Result<uint32_t> column = SmallUint(f.Find("column"), "column");
      if (!function) return function.error();
      if (!raw) return raw.error();
      if (!file) return file.error();
      if (!line) return line.error();
      if (!column) return column.error();
      const JsonValue* inlined = f.Find("inlined");
      if (inlined != nullptr && !inlined->is_bool()) return Invalid("\"inlined\" must be a bool");
      frame.function = *std::move(function);
      frame.raw_function = *std::move(raw);
      frame.file = *std::move(file);
      frame.line = *line;
      frame.column = *column;
      frame.inlined = inlined != nullptr && inlined->boolean();
      out.lines.push_back(std::move(frame));
    }
  }
  if (out.reason.has_value() == !out.lines.empty()) {
    return Invalid("an answer has either \"frames\" or a \"reason\"");
  }
  return out;
}

}  // namespace

std::optional<Reason> ReasonFromName(std::string_view name) {
  for (unsigned r = 0; r <= static_cast<unsigned>(Reason::kKernelAddressesHidden); ++r) {
    if (name == ReasonName(static_cast<Reason>(r))) return static_cast<Reason>(r);
  }
  return std::nullopt;
}

Result<SymbolizeRequest> ParseSymbolizeRequest(std::string_view body, const RequestLimits& limits) {
  Result<JsonValue> json = ParseJson(body);
  if (!json) return json.error();
  if (!json->is_object()) return Invalid("the request must be a JSON object");
  if (Result<void> r = OnlyFields(*json, "the request", {"modules", "demangle", "inlines"}); !r) {
    return r.error();
  }
  SymbolizeRequest request;
  for (auto [key, flag] :
       {std::pair{"demangle", &request.demangle}, std::pair{"inlines", &request.inlines}}) {
    if (const JsonValue* v = json->Find(key)) {
      if (!v->is_bool()) return Invalid("\"" + std::string(key) + "\" must be true or false");
      *flag = v->boolean();
    }
  }
  const JsonValue* modules = json->Find("modules");
  if (modules == nullptr || !modules->is_array()) {
    return Invalid("the request needs \"modules\": an array of {build_id, offsets}");
  }
  if (modules->array().size() > limits.max_modules) {
    return Invalid("too many modules: " + std::to_string(modules->array().size()) + " (at most " +
                   std::to_string(limits.max_modules) + " per request)");
  }
  size_t total = 0;
  for (const JsonValue& m : modules->array()) {
    std::string where = "modules[" + std::to_string(request.modules.size()) + "]";
    if (!m.is_object()) return Invalid(where + " must be an object");
    if (Result<void> r = OnlyFields(m, where, {"build_id", "offsets"}); !r) return r.error();
    ModuleQuery query;
    Result<std::vector<uint8_t>> id = BuildIdField(m, where);
    if (!id) return id.error();
    query.build_id = *std::move(id);
    const JsonValue* offsets = m.Find("offsets");
    if (offsets == nullptr || !offsets->is_array()) {
      return Invalid(where + ": \"offsets\" must be an array of integers");
    }
    total += offsets->array().size();
    if (total > limits.max_offsets) {
      return Invalid("too many offsets (at most " + std::to_string(limits.max_offsets) +
                     " per request)");
    }
    query.offsets.reserve(offsets->array().size());
    for (const JsonValue& o : offsets->array()) {
      if (!o.is_uint64()) {
        return Invalid(where + ": offsets must be integers from 0 to 2^64-1");
      }
      query.offsets.push_back(o.uint64());
    }
    request.modules.push_back(std::move(query));
  }
  return request;
}

std::string WriteSymbolizeRequest(const SymbolizeRequest& request) {
  JsonWriter w;
  w.BeginObject();
  w.Key("modules");
  w.BeginArray();
  for (const ModuleQuery& m : request.modules) {
    w.BeginObject();
    w.Key("build_id");
    w.String(ToHex(m.build_id));
    w.Key("offsets");
    w.BeginArray();
    for (uint64_t o : m.offsets) w.Uint(o);
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.Key("demangle");
  w.Bool(request.demangle);
  w.Key("inlines");
  w.Bool(request.inlines);
  w.EndObject();
  return std::move(w).Take();
}

Result<SymbolizeResponse> ParseSymbolizeResponse(std::string_view body) {
  Result<JsonValue> json = ParseJson(body);
  if (!json) return json.error();
  if (!json->is_object()) return Invalid("the response must be a JSON object");
  if (Result<void> r = OnlyFields(*json, "the response", {"modules"}); !r) return r.error();
  const JsonValue* modules = json->Find("modules");
  if (modules == nullptr || !modules->is_array()) return Invalid("the response has no modules");
  SymbolizeResponse response;
  for (const JsonValue& m : modules->array()) {
    if (!m.is_object()) return Invalid("a module answer must be an object");
    if (Result<void> r = OnlyFields(m, "a module answer", {"build_id", "message", "answers"}); !r) {
      return r.error();
    }
    ModuleAnswer module;
    Result<std::vector<uint8_t>> id = BuildIdField(m, "a module answer");
    if (!id) return id.error();
    module.build_id = *std::move(id);
    Result<std::string> message = StringField(m, "message");
    if (!message) return message.error();
    module.message = *std::move(message);
    const JsonValue* answers = m.Find("answers");
    if (answers == nullptr || !answers->is_array()) return Invalid("\"answers\" must be an array");
    for (const JsonValue& a : answers->array()) {
      const JsonValue* offset = a.Find("offset");
      if (offset == nullptr || !offset->is_uint64()) {
        return Invalid("an answer needs an integer \"offset\"");
      }
      Result<FrameSymbols> symbols = ParseAnswer(a);
      if (!symbols) return symbols.error();
      module.offsets.push_back(offset->uint64());
      module.answers.push_back(*std::move(symbols));
    }
    response.modules.push_back(std::move(module));
  }
  return response;
}

std::string WriteSymbolizeResponse(const SymbolizeResponse& response) {
  JsonWriter w;
  w.BeginObject();
  w.Key("modules");
  w.BeginArray();
  for (const ModuleAnswer& m : response.modules) {
    w.BeginObject();
    w.Key("build_id");
    w.String(ToHex(m.build_id));
    if (!m.message.empty()) {
      w.Key("message");
      w.String(m.message);
    }
    w.Key("answers");
    w.BeginArray();
    for (size_t i = 0; i < m.answers.size() && i < m.offsets.size(); ++i) {
      const FrameSymbols& a = m.answers[i];
      w.BeginObject();
      w.Key("offset");
      w.Uint(m.offsets[i]);
      if (a.reason) {
        w.Key("reason");
        w.String(ReasonName(*a.reason));
      }
      if (!a.lines.empty()) {
        w.Key("frames");
        w.BeginArray();
        for (const SourceFrame& f : a.lines) {
          w.BeginObject();
          w.Key("function");
          w.String(f.function);
          w.Key("raw_function");
          w.String(f.raw_function);
          w.Key("file");
          w.String(f.file);
          w.Key("line");
          w.Uint(f.line);
          w.Key("column");
          w.Uint(f.column);
          w.Key("inlined");
          w.Bool(f.inlined);
          w.EndObject();
        }
        w.EndArray();
      }
      w.EndObject();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::move(w).Take();
}

std::string WriteErrorBody(std::string_view error, std::string_view message) {
  JsonWriter w;
  w.BeginObject();
  w.Key("error");
  w.String(error);
  w.Key("message");
  w.String(message);
  w.EndObject();
  return std::move(w).Take();
}

}  // namespace stacksym::remote
