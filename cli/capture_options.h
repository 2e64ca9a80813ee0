// The flags of sampling, shared by `record` and `agent` so that both take the same targets,
// rate, backend, call graph, off-CPU and Python options and turn them into the same
// RecordOptions.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "stacksym/capture.h"
#include "stacksym/result.h"

namespace stacksym::cli {

struct CaptureCliOptions {
  RecordOptions record;
  uint32_t frequency = 99;
  std::string event = "cpu-clock";
  std::string backend = "auto";
  std::string ringbuf_size;    // default: RecordOptions' (from the rate, CPUs and call graph)
  std::string bpf_table_size;  // default: RecordOptions::bpf_unwind_rows
  std::string call_graph;      // empty: the library's default (bpf where BPF runs)
  double off_cpu_min_us = 0;
  bool all = false;
  bool no_python = false;

  // Fills `record` from the flags; the error names the flag (a usage error).
  Result<void> Resolve();
};

// Adds the flags, -F defaulting to `default_frequency`.
void AddCaptureOptions(CLI::App& app, CaptureCliOptions* options, uint32_t default_frequency);

// "8M", "64K", "1G", "4096".
bool ParseByteSize(const std::string& text, uint64_t* out);

}  // namespace stacksym::cli
