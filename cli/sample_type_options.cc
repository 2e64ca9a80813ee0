#include "sample_type_options.h"

namespace stacksym::cli {

Result<SampleTypeCliOptions::Choice> SampleTypeCliOptions::Parse() const {
  Choice choice;
  if (!sample_type.empty()) {
    Result<SampleType> type = ParseSampleTypeName(sample_type);
    if (!type) return std::move(type).error();
    choice.type = *type;
  }
  if (!off_cpu_states.empty()) {
    Result<std::vector<ThreadState>> states = ParseThreadStates(off_cpu_states);
    if (!states) return std::move(states).error();
    choice.states = std::move(*states);
  }
  return choice;
}

void AddSampleTypeOptions(CLI::App& app, SampleTypeCliOptions* options) {
  app.add_option("--sample-type", options->sample_type,
                 "The value folded, html, svg and report output show: samples, cpu, off_cpu or "
                 "wall (cpu + off_cpu; folded: nanoseconds). Default: wall with off-CPU time, "
                 "else samples");
  app.add_option("--off-cpu-state", options->off_cpu_states,
                 "Only stacks in these thread states (comma-separated): running (CPU samples), "
                 "sleeping, uninterruptible, preempted, other");
}

}  // namespace stacksym::cli
