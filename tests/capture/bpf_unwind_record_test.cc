// --call-graph bpf against the user-space unwinder: in verify mode every sample unwound in the
// BPF program also carries a stack copy of the same moment, which the recorder unwinds with
// UnwindStack (the reference) and compares. On the FP-less fixtures (gcc, clang) and on
// python3, at least 99.9 % of the chains must be the same; every difference is printed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "record_test_util.h"
#include "stacksym/capture.h"

namespace stacksym {
namespace {

const std::string kFixtureDir = STACKSYM_FIXTURE_DIR;

void CheckAgreement(const std::vector<std::string>& command, const std::string& who) {
  RecordOptions o;
  o.backend = CaptureBackend::kBpf;
  o.frequency_hz = 499;
  o.command = command;
  o.call_graph = CallGraph::kBpf;
  o.bpf_unwind_verify = true;
  o.stack_copy_bytes = kMaxStackCopyBytes;  // so that the reference sees as deep as it can
  o.ringbuf_size = 64u << 20;
  CREATE_RECORDER_OR_SKIP(rec, o);
  ASSERT_TRUE(rec->Run().ok());
  const RecordStats& st = rec->stats();
  std::printf(
      "%s: %llu samples, %llu unwound in BPF (%.1f frames each), %llu stack copies "
      "before the tables were loaded; %llu of %llu chains agree\n",
      who.c_str(), static_cast<unsigned long long>(st.samples),
      static_cast<unsigned long long>(st.bpf_unwound),
      st.bpf_unwound
          ? static_cast<double>(st.bpf_unwind_frames) / static_cast<double>(st.bpf_unwound)
          : 0.0,
      static_cast<unsigned long long>(st.bpf_fallback_copies),
      static_cast<unsigned long long>(st.verify_agreed),
      static_cast<unsigned long long>(st.verify_samples));
  for (const std::string& d : st.verify_differences) std::printf("  differs: %s\n", d.c_str());
  // Every walk in the program says why it ended; most reach the outermost frame.
  uint64_t ends = 0;
  std::printf("  walks in BPF ended:");
  for (int i = 0; i < kUnwindEndCount; ++i) {
    ends += st.bpf_unwind_ends[i];
    if (st.bpf_unwind_ends[i] != 0) {
      std::printf(" %s=%llu", UnwindEndName(static_cast<UnwindEnd>(i)),
                  static_cast<unsigned long long>(st.bpf_unwind_ends[i]));
    }
  }
  std::printf("\n");
  EXPECT_EQ(ends, st.verify_samples);
  EXPECT_GE(st.bpf_unwind_ends[static_cast<int>(UnwindEnd::kOutermost)] * 2, ends)
      << who << ": fewer than half the walks in BPF reached the outermost frame";
  EXPECT_EQ(st.lost, 0u);
  EXPECT_EQ(st.bpf_processes_not_loaded, 0u) << st.bpf_first_load_problem;
  ASSERT_GT(st.verify_samples, 200u) << who << ": too few samples unwound in BPF to judge";
  EXPECT_EQ(st.verify_samples, st.bpf_unwound - st.lost);
  EXPECT_GE(st.verify_agreed * 1000, st.verify_samples * 999)
      << who << ": " << st.verify_samples - st.verify_agreed << " of " << st.verify_samples
      << " chains differ (printed above)";
}

TEST(BpfUnwindRecordTest, AgreesWithStackCopiesGcc) {
  CheckAgreement({kFixtureDir + "/unwind_app_gcc", "2.5"}, "unwind_app_gcc");
}

TEST(BpfUnwindRecordTest, AgreesWithStackCopiesClang) {
  CheckAgreement({kFixtureDir + "/unwind_app_clang", "2.5"}, "unwind_app_clang");
}

TEST(BpfUnwindRecordTest, AgreesWithStackCopiesPython) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  // Deep recursion through the interpreter's C frames, and some library calls.
  CheckAgreement({"/usr/bin/python3", "-c",
                  "import time, json\n"
                  "def f(n):\n"
                  "    return f(n - 1) + 1 if n else len(json.dumps(list(range(200))))\n"
                  "end = time.time() + 2.5\n"
                  "while time.time() < end:\n"
                  "    f(30)\n"},
                 "python3");
}

}  // namespace
}  // namespace stacksym
