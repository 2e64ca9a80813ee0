#include "output/pprof_dictionary.h"

#include <algorithm>

#include "output/flame_tree.h"

namespace stacksym {

namespace pb = perftools::profiles;

PprofDictionaryWriter PprofDictionaryWriter::Fresh(pb::Profile* out) {
  PprofDictionaryWriter d(out);
  d.String("");
  return d;
}

PprofDictionaryWriter PprofDictionaryWriter::Adopt(pb::Profile* out) {
  PprofDictionaryWriter d(out);
  if (out->string_table_size() == 0) out->add_string_table();
  // From the end, so that of equal entries the first one is kept.
  for (int i = out->string_table_size() - 1; i >= 0; --i) d.by_written_[out->string_table(i)] = i;
  for (const pb::Function& f : out->function()) {
    d.next_function_id_ = std::max(d.next_function_id_, f.id() + 1);
    d.functions_.try_emplace({f.name(), f.system_name(), f.filename(), f.start_line()}, f.id());
  }
  return d;
}

int64_t PprofDictionaryWriter::String(std::string_view s) {
  auto [it, inserted] = by_given_.try_emplace(std::string(s), 0);
  if (!inserted) return it->second;
  std::string valid = output::ToValidUtf8(s);
  auto [written, added] = by_written_.try_emplace(valid, out_->string_table_size());
  if (added) out_->add_string_table(std::move(valid));
  it->second = written->second;
  return it->second;
}

uint64_t PprofDictionaryWriter::Function(const SourceFrame& line, bool python) {
  int64_t name = String(!line.function.empty() ? line.function : line.raw_function);
  int64_t system = String(!line.raw_function.empty() ? line.raw_function : line.function);
  int64_t file = String(line.file);
  int64_t start = python ? line.start_line : 0;
  auto [it, inserted] = functions_.try_emplace({name, system, file, start}, next_function_id_);
  if (inserted) {
    pb::Function* fn = out_->add_function();
    fn->set_id(next_function_id_++);
    fn->set_name(name);
    fn->set_system_name(system);
    fn->set_filename(file);
    fn->set_start_line(start);
  }
  return it->second;
}

}  // namespace stacksym
