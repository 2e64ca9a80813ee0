// The Python call chain of a thread, read from user space: the interpreters' thread lists from
// `_PyRuntime`, a thread's innermost `_PyInterpreterFrame`, and each frame's (code object,
// instruction) out to the thread's first. The BPF program does the same walk at sample time
// (src/capture/bpf); this one is its reference, used by the tests and where a process is read
// from user space.
//
// Python frames live on the heap (in the thread's data stack, or in generator objects), linked
// by `previous`. One `_PyEval_EvalFrameDefault` call runs several of them: in 3.11 the outermost
// frame of each call has `is_entry` set; from 3.12 on each call's frames end at a frame the
// evaluator owns (`owner` >= FRAME_OWNED_BY_CSTACK), which is not a Python function and is not
// reported. Either way a frame's `entry` says that the next frame out belongs to the next
// evaluator call out (a C function called the function in between).
//
//   std::vector<ThreadState> threads = ListThreadStates(memory, layout, runtime_address);
//   FrameWalk walk = WalkFrames(memory, layout, threads[0].address);
#pragma once

#include <cstdint>
#include <vector>

#include "interp/python/layout.h"
#include "interp/python/memory.h"

namespace stacksym::interp::python {

struct ThreadState {
  uint64_t address = 0;  // of the PyThreadState
  uint64_t interpreter = 0;
  uint64_t native_thread_id = 0;  // the kernel's tid
};

// Every thread state of every interpreter reachable from _PyRuntime at `runtime` (a process
// address), at most `max` of them; stops quietly at a pointer it cannot read.
std::vector<ThreadState> ListThreadStates(MemoryReader& memory, const Layout& layout,
                                          uint64_t runtime, size_t max = 4096);

struct PythonFrame {
  uint64_t code = 0;         // the code object
  int64_t instruction = -1;  // code unit the frame stands at (prev_instr's / instr_ptr's)
  bool entry = false;        // the outermost frame of its evaluator call
  uint8_t owner = 0;         // FRAME_OWNED_BY_THREAD, _GENERATOR, _FRAME_OBJECT
};

enum class WalkEnd : uint8_t {
  kOutermost,   // the thread's first frame was reached (or it runs no Python)
  kDepth,       // max_frames frames were read first
  kUnreadable,  // a frame or the thread state could not be read
};

struct FrameWalk {
  std::vector<PythonFrame> frames;  // innermost first
  WalkEnd end = WalkEnd::kOutermost;
};

// The frames of the thread whose PyThreadState is at `tstate`.
FrameWalk WalkFrames(MemoryReader& memory, const Layout& layout, uint64_t tstate,
                     size_t max_frames = 256);

// The instruction (code unit index) a frame stands at, from its instruction pointer and its code
// object's address: (pointer - (code + co_code_adaptive)) / 2, as CPython's
// _PyInterpreterFrame_LASTI.
int64_t InstructionIndex(const Layout& layout, uint64_t code, uint64_t instruction_pointer);

}  // namespace stacksym::interp::python
