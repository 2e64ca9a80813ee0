// --sample-type and --off-cpu-state, shared by `convert`, `report` and `record`: which value the
// single-valued outputs (folded, html, svg, report) show, and which thread states every output
// keeps. The names are checked before a profile is read or recorded; the choice is checked
// against the profile once it is there (off_cpu and wall need off-CPU time).
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "stacksym/output.h"
#include "stacksym/profile.h"
#include "stacksym/result.h"

namespace stacksym::cli {

struct SampleTypeCliOptions {
  std::string sample_type;     // empty: the profile's default (wall with off-CPU time)
  std::string off_cpu_states;  // "sleeping,uninterruptible"; empty: every state

  // What the flags name; an Error for an unknown type or state.
  struct Choice {
    std::optional<SampleType> type;
    std::vector<ThreadState> states;
  };
  Result<Choice> Parse() const;
};

void AddSampleTypeOptions(CLI::App& app, SampleTypeCliOptions* options);

}  // namespace stacksym::cli
