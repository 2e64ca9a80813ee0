#include "output/pprof_dictionary.h"

#include <algorithm>

namespace stacksym {

namespace pb = perftools::profiles;

PprofDictionaryWriter PprofDictionaryWriter::Fresh(pb::Profile* out) {
  return PprofDictionaryWriter(out);  // the string table writes "" as entry 0
}

PprofDictionaryWriter PprofDictionaryWriter::Adopt(pb::Profile* out) {
  PprofDictionaryWriter d(out);  // its strings indexed by the string table
  for (const pb::Function& f : out->function()) {
    d.next_function_id_ = std::max(d.next_function_id_, f.id() + 1);
    d.functions_.try_emplace({f.name(), f.system_name(), f.filename(), f.start_line()}, f.id());
  }
  return d;
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
