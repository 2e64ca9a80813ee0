#include "export/otlp_dictionary.h"

#include "output/flame_tree.h"

namespace stacksym {

namespace pb = stacksym::otlp;

OtlpDictionaryWriter OtlpDictionaryWriter::Fresh(pb::ProfilesDictionary* out) {
  OtlpDictionaryWriter d(out);
  out->add_mapping_table();
  out->add_location_table();
  out->add_function_table();
  pb::Link* link = out->add_link_table();  // zero bytes of the lengths codecs expect
  link->set_trace_id(std::string(16, '\0'));
  link->set_span_id(std::string(8, '\0'));
  out->add_attribute_table();
  out->add_stack_table();
  return d;  // the string table wrote "" as entry 0
}

OtlpDictionaryWriter OtlpDictionaryWriter::Adopt(pb::ProfilesDictionary* out) {
  OtlpDictionaryWriter d(out);  // its strings indexed by the string table
  if (out->function_table_size() == 0) out->add_function_table();
  // From the end, so that of equal entries the first one is kept.
  for (int i = out->function_table_size() - 1; i >= 1; --i) {
    const pb::Function& f = out->function_table(i);
    d.functions_[{f.name_strindex(), f.system_name_strindex(), f.filename_strindex(),
                  f.start_line()}] = i;
  }
  return d;
}

int32_t OtlpDictionaryWriter::Function(const SourceFrame& line, bool python) {
  int32_t name = String(!line.function.empty() ? line.function : line.raw_function);
  int32_t system = String(line.raw_function);
  int32_t file = String(line.file);
  int64_t start = python ? line.start_line : 0;
  auto [it, inserted] =
      functions_.try_emplace({name, system, file, start}, out_->function_table_size());
  if (inserted) {
    pb::Function* fn = out_->add_function_table();
    fn->set_name_strindex(name);
    fn->set_system_name_strindex(system);
    fn->set_filename_strindex(file);
    fn->set_start_line(start);
  }
  return it->second;
}

int32_t OtlpDictionaryWriter::Stack(const std::vector<int32_t>& locations) {
  auto [it, inserted] = stacks_.try_emplace(locations, out_->stack_table_size());
  if (inserted) {
    pb::Stack* stack = out_->add_stack_table();
    for (int32_t l : locations) stack->add_location_indices(l);
  }
  return it->second;
}

int32_t OtlpDictionaryWriter::Attribute(std::string_view key, bool is_int, std::string_view s,
                                        int64_t i) {
  int32_t key_index = String(key);
  auto [it, inserted] =
      attributes_.try_emplace({key_index, is_int, std::string(s), i}, out_->attribute_table_size());
  if (inserted) {
    pb::KeyValueAndUnit* kv = out_->add_attribute_table();
    kv->set_key_strindex(key_index);
    if (is_int) {
      kv->mutable_value()->set_int_value(i);
    } else {
      kv->mutable_value()->set_string_value(output::ToValidUtf8(s));
    }
  }
  return it->second;
}

}  // namespace stacksym
