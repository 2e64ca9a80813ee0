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

// The same stacks with no symbols at all (what `record` writes before symbolization).
Profile MakeNormalizedOnlyProfile();

std::string ReadFileOrDie(const std::string& path);
// A fresh directory for the running test case's files:
// <build>/test-artifacts/output/<name>/<test case>.
std::string TestOutputDir(const std::string& name);

}  // namespace stacksym::testing
