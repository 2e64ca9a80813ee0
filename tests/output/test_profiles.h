// Hand-built profiles shared by the output tests.
#pragma once

#include <string>

#include "stacksym/profile.h"

namespace stacksym::testing {

// Three threads of "app" (pid 100) and one of "other" (pid 200):
//   app    (tid 100, 60 + tid 101, 20): main → work → [inlined] inline_helper → ns::hot_leaf(int)
//   worker (tid 102, 15):   main → libfoo.so+0x2000 (unsymbolized) → entry_SYSCALL_64 [k]
//                           → do_syscall_64 [k]
//   other  (pid 200, 5):    0x7f0000001234 (raw, not normalized)
Profile MakeSampleProfile();

// The folded text MakeSampleProfile() must produce.
extern const char kSampleFolded[];

// MakeSampleProfile() recorded with off-CPU time, at 100 Hz (period 10 ms): CPU time 1 s
// (hot_leaf 800 ms, worker 150 ms, other 50 ms) and 2.6 s off CPU:
//   worker (tid 102) sleeping, its CPU stack → schedule [k]: 2 s (schedule: only off CPU)
//   app    (tid 101) uninterruptible: main → work          500 ms
//   app    (tid 100) preempted: main → work → ... → hot_leaf 100 ms
// Wall time is 3.6 s.
Profile MakeOffCpuProfile();

// The same stacks with no symbols at all (what `record` writes before symbolization).
Profile MakeNormalizedOnlyProfile();

// Folded stacks of a python3 process that is mostly shallow and wide, with two rare towers of
// 190 frames (below the thread name) when tower_samples > 0, and a 255-frame one of 1 sample:
//   python3;_start;main;run;compute                      6050
//   python3;_start;main;run;compute;helper                400
//   python3;_start;main;run;parse_json                   2500
//   python3;_start;main;run;read_file                     999
//   python3;_start;main;run;read_file;spin (x250)           1
//   python3;_start;main;run;recurse (x186);deep_leaf     tower_samples
//   python3;_start;main;run;visit (x186);deep_leaf       tower_samples
// With tower_samples = 25 there are 10000 samples and each tower is 0.25 % wide; the spin
// tower is 0.01 % of all and 0.1 % of read_file.
std::string DeepFolded(uint64_t tower_samples);

std::string ReadFileOrDie(const std::string& path);
// A fresh directory for the running test case's files:
// <build>/test-artifacts/output/<name>/<test case>.
std::string TestOutputDir(const std::string& name);

}  // namespace stacksym::testing
