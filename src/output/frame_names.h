// Display names of profile frames, shared by the folded, flame graph and report writers so
// that every output names a frame the same way.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stacksym/profile.h"

namespace stacksym::output {

enum class EntryKind : uint8_t { kUser, kKernel, kInline };

// One displayed frame: a function of an inline chain, or an unsymbolized address.
struct NamedEntry {
  std::string name;
  EntryKind kind = EntryKind::kUser;
};

// Entries of every distinct frame, computed once: names[frame] is outermost first (the
// out-of-line function, then the functions inlined into it, innermost last).
std::vector<std::vector<NamedEntry>> NameAllFrames(const Profile& profile);

// "libc.so.6+0x1a2b3" / "0xffffffff81000000" / "0x7f0000001000" for frames without symbols.
std::string UnsymbolizedName(const Profile& profile, const ProfileFrame& frame);

// Last path component ("/usr/lib/libc.so.6" → "libc.so.6").
std::string BaseName(const std::string& path);

// Module path shown for a frame ("[kernel.kallsyms]" for kernel frames, "[unknown]" when the
// frame has no module).
std::string FrameModuleName(const Profile& profile, const ProfileFrame& frame);

// The frame an off-CPU stack ends in, naming the state its thread left the CPU in
// ("[off-cpu: sleeping]"), so that the outputs that draw or list stacks show how each waited;
// empty for running (CPU samples get no such frame).
std::string OffCpuStateFrameName(ThreadState state);

}  // namespace stacksym::output
