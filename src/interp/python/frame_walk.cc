#include "interp/python/frame_walk.h"

#include <cstring>
#include <unordered_set>

namespace stacksym::interp::python {

namespace {

// Sub-interpreters are few; a thread list this long is a cycle.
constexpr size_t kMaxInterpreters = 256;

template <class T>
T Field(const std::vector<uint8_t>& bytes, uint32_t offset) {
  T v{};
  if (offset != kAbsent && offset <= bytes.size() && bytes.size() - offset >= sizeof(T)) {
    std::memcpy(&v, bytes.data() + offset, sizeof(T));
  }
  return v;
}

// The first frame of the thread state at `tstate`: through its _PyCFrame (3.11, 3.12) or
// directly (3.13+). False when a pointer on the way cannot be read.
bool CurrentFrame(MemoryReader& memory, const Layout& layout, uint64_t tstate, uint64_t* frame) {
  uint64_t holder = tstate;
  if (layout.tstate_cframe != kAbsent) {
    if (!ReadValue(memory, tstate + layout.tstate_cframe, &holder)) return false;
    if (holder == 0) {
      *frame = 0;
      return true;
    }
  }
  return ReadValue(memory, holder + layout.current_frame, frame);
}

}  // namespace

std::vector<ThreadState> ListThreadStates(MemoryReader& memory, const Layout& layout,
                                          uint64_t runtime, size_t max) {
  std::vector<ThreadState> out;
  uint64_t interp = 0;
  if (!ReadValue(memory, runtime + layout.runtime_interpreters_head, &interp)) return out;
  std::unordered_set<uint64_t> seen;
  for (size_t i = 0; interp != 0 && i < kMaxInterpreters; ++i) {
    uint64_t tstate = 0;
    if (!ReadValue(memory, interp + layout.interp_threads_head, &tstate)) break;
    while (tstate != 0 && out.size() < max && seen.insert(tstate).second) {
      ThreadState t{tstate, interp, 0};
      uint64_t next = 0;
      if (!ReadValue(memory, tstate + layout.tstate_native_thread_id, &t.native_thread_id) ||
          !ReadValue(memory, tstate + layout.tstate_next, &next)) {
        break;
      }
      out.push_back(t);
      tstate = next;
    }
    if (!ReadValue(memory, interp + layout.interp_next, &interp)) break;
  }
  return out;
}

int64_t InstructionIndex(const Layout& layout, uint64_t code, uint64_t instruction_pointer) {
  uint64_t first = code + layout.code_adaptive;
  // Pointers below the first instruction (3.11's "not started", or damage) count as -1.
  if (instruction_pointer < first) return -1;
  uint64_t units = (instruction_pointer - first) / 2;
  return units > INT32_MAX ? -1 : static_cast<int64_t>(units);
}

FrameWalk WalkFrames(MemoryReader& memory, const Layout& layout, uint64_t tstate,
                     size_t max_frames) {
  FrameWalk walk;
  uint64_t frame = 0;
  if (!CurrentFrame(memory, layout, tstate, &frame)) {
    walk.end = WalkEnd::kUnreadable;
    return walk;
  }
  std::vector<uint8_t> bytes(layout.FrameBytes());
  uint64_t tag_mask = ~uint64_t{layout.code_tag_bits};
  // The evaluator's own frames (3.12+) are read but not kept: the frames read are bounded too,
  // or a cycle of them (damaged memory) would never end. The BPF walk's bound is the same.
  size_t steps = 0;
  const size_t max_steps = max_frames + 16;
  while (frame != 0) {
    if (walk.frames.size() >= max_frames || ++steps > max_steps) {
      walk.end = WalkEnd::kDepth;
      return walk;
    }
    if (!memory.Read(frame, bytes)) {
      walk.end = WalkEnd::kUnreadable;
      return walk;
    }
    uint8_t owner = Field<uint8_t>(bytes, layout.frame_owner);
    uint64_t previous = Field<uint64_t>(bytes, layout.frame_previous);
    if (owner >= layout.shim_owner) {
      // The evaluator's own frame (3.12+): the Python frame before it was its call's outermost.
      if (!walk.frames.empty()) walk.frames.back().entry = true;
      frame = previous;
      continue;
    }
    PythonFrame f;
    f.code = Field<uint64_t>(bytes, layout.frame_code) & tag_mask;
    f.instruction = InstructionIndex(layout, f.code, Field<uint64_t>(bytes, layout.frame_instr));
    f.entry = layout.frame_is_entry != kAbsent && Field<uint8_t>(bytes, layout.frame_is_entry);
    f.owner = owner;
    walk.frames.push_back(f);
    frame = previous;
  }
  // The thread's first frame is the outermost of its evaluator call.
  if (!walk.frames.empty()) walk.frames.back().entry = true;
  return walk;
}

}  // namespace stacksym::interp::python
