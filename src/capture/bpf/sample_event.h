// Layout of what the BPF programs hand to user space. Shared by profile.bpf.c (compiled with
// clang -target bpf) and the C++ reader, so it uses only fixed-width kernel types.
#pragma once

#define STACKSYM_MAX_FRAMES 127  // PERF_MAX_STACK_DEPTH
#define STACKSYM_COMM_LEN 16
#define STACKSYM_BUILD_ID_SIZE 20

// Room for the variable parts of a sample in the per-CPU scratch buffer. Powers of two so
// that the BPF verifier can bound offsets with a mask.
#define STACKSYM_KSTACK_ROOM 1024  // >= 127 * 8
#define STACKSYM_USTACK_ROOM 4096  // >= 127 * sizeof(struct stacksym_build_id_frame)
#define STACKSYM_UIPS_ROOM 1024    // >= 127 * 8: user IPs unwound in BPF
// --call-graph dwarf: the user registers and up to this many bytes of user stack (perf's
// limit too: a perf sample record's size is 16 bits).
#define STACKSYM_STACK_COPY_MAX 65528
#define STACKSYM_STACK_COPY_ROOM 65536  // power of two >= STACKSYM_STACK_COPY_MAX
#define STACKSYM_PAGE_SIZE 4096

// sample flags
#define STACKSYM_SAMPLE_KTHREAD 1u        // kernel thread: no user stack expected
#define STACKSYM_SAMPLE_USER_BUILD_ID 2u  // ustack holds stacksym_build_id_frame entries
#define STACKSYM_SAMPLE_STACK_COPY 4u     // ustack holds stacksym_user_regs + stack bytes
// --call-graph bpf: the ustack starts with unwind_frames u64 IPs unwound by the program
// (innermost first; return addresses like a frame-pointer chain). With STACK_COPY too (the
// verify mode), stacksym_user_regs + the stack copy follow the IPs.
#define STACKSYM_SAMPLE_BPF_UNWOUND 8u
// The walk met a pc outside the process's loaded mappings (dlopen, exec): reload them.
#define STACKSYM_SAMPLE_UNKNOWN_MAPPING 16u
// Not a sample: the process exec'd (sched_process_exec), so every mapping it had is gone and
// what user space remembers of them must not answer for its later samples.
#define STACKSYM_SAMPLE_EXEC 32u
// The process runs a CPython interpreter user space registered (python_procs): py_frames
// Python frames follow the kernel stack, and py_end says why their walk ended.
#define STACKSYM_SAMPLE_PYTHON 1024u  // clear of the bits --off-cpu uses (64-512, 16-18)
// --off-cpu: not a CPU sample but an interval the task spent off CPU, ended now: off_cpu_ns
// holds its length and the bits at STACKSYM_SAMPLE_STATE_SHIFT the state it left the CPU in.
#define STACKSYM_SAMPLE_OFF_CPU 64u
// --off-cpu, stacks too large for the task's entry (stack copies): sent when the interval
// began (time_ns: its start), and its end follows as a record of only a header
// (STACKSYM_SAMPLE_OFF_CPU_CLOSE: time_ns the same start, off_cpu_ns its length), with
// STACKSYM_SAMPLE_OFF_CPU_DISCARD when it is not to be kept (too short).
#define STACKSYM_SAMPLE_OFF_CPU_OPEN 128u
#define STACKSYM_SAMPLE_OFF_CPU_CLOSE 256u
#define STACKSYM_SAMPLE_OFF_CPU_DISCARD 512u
#define STACKSYM_SAMPLE_STATE_SHIFT 16
#define STACKSYM_SAMPLE_STATE_MASK 7u
// States at switch-out; the values of stacksym::ThreadState.
#define STACKSYM_STATE_SLEEPING 1
#define STACKSYM_STATE_UNINTERRUPTIBLE 2
#define STACKSYM_STATE_PREEMPTED 3
#define STACKSYM_STATE_OTHER 4

// A sample record in the ring buffer: this header, then kstack_bytes of u64 kernel IPs
// (innermost first), then py_frames stacksym_py_frame entries (STACKSYM_SAMPLE_PYTHON), then
// ustack_bytes of user frames (u64 IPs, or build-ID frames).
struct stacksym_sample {
  __u64 time_ns;  // CLOCK_MONOTONIC (bpf_ktime_get_ns)
  __u32 pid;      // thread group id
  __u32 tid;
  __u32 cpu;
  __u32 flags;
  __s32 kstack_bytes;  // >= 0: bytes that follow; < 0: -errno from bpf_get_stack
  __s32 ustack_bytes;
  char comm[STACKSYM_COMM_LEN];
  __u32 unwind_frames;  // STACKSYM_SAMPLE_BPF_UNWOUND: IPs at the start of the ustack
  __u32 unwind_end;     // STACKSYM_SAMPLE_BPF_UNWOUND: why the walk ended (STACKSYM_END_*)
  __u64 off_cpu_ns;     // STACKSYM_SAMPLE_OFF_CPU: the interval's length
  __u32 py_frames;      // STACKSYM_SAMPLE_PYTHON: Python frames after the kernel stack
  __u32 py_end;         // STACKSYM_SAMPLE_PYTHON: why their walk ended (STACKSYM_PY_END_*)
};

// Python frames (src/interp/python/frame_walk.h is the same walk in user space): the code
// object and the code unit the frame stands at, innermost first. One evaluator call
// (_PyEval_EvalFrameDefault) runs several: STACKSYM_PY_ENTRY marks the outermost of each.
#define STACKSYM_MAX_PY_FRAMES 64
#define STACKSYM_PY_ROOM 1024  // STACKSYM_MAX_PY_FRAMES * sizeof(struct stacksym_py_frame)
#define STACKSYM_PY_ENTRY 1u
// The code object's fingerprint (stacksym_py_code_check) is in bits 16-31: user space reads the
// object later, when its address may hold another one (the first freed): it names the frame
// only when the object it reads has the fingerprint the sample saw.
#define STACKSYM_PY_CHECKED 2u
#define STACKSYM_PY_CHECK_SHIFT 16
struct stacksym_py_frame {
  __u64 code;         // PyCodeObject address
  __s32 instruction;  // code unit index (-1: not started)
  __u32 flags;        // STACKSYM_PY_ENTRY, STACKSYM_PY_CHECKED; owner in bits 8-15, check 16-31
};
#include "../../interp/python/code_check.h"
// Why a Python walk ended.
#define STACKSYM_PY_END_OUTERMOST 0    // the thread's first frame (or it runs no Python)
#define STACKSYM_PY_END_DEPTH 1        // STACKSYM_MAX_PY_FRAMES frames
#define STACKSYM_PY_END_READ_FAILED 2  // a frame or the thread state could not be read
#define STACKSYM_PY_END_NO_THREAD 3    // no thread state of the process is this thread's
#define STACKSYM_PY_END_COUNT 4

// A registered interpreter: where its thread states are reached from, and the offsets of the
// fields the walk reads (a Layout, interp/python/layout.h). Keyed by tgid in python_procs.
#define STACKSYM_PY_ABSENT 0xffffffffu
#define STACKSYM_PY_FRAME_READ 80  // bytes of a frame read at once (>= Layout::FrameBytes())
struct stacksym_python_proc {
  __u64 interpreters_head;  // process address of _PyRuntime.interpreters.head
  // Process addresses of the GIL holder's thread state and of the last one to hold it (3.11:
  // _PyRuntime.gilstate.tstate_current, _PyRuntime.ceval.gil.last_holder; 0: none). A
  // sub-interpreter's code runs on a thread state of its own, swapped in by the thread that runs
  // it; one that waits has just dropped the GIL.
  __u64 tstate_current;
  __u64 gil_last_holder;
  __u32 interp_next;
  __u32 interp_threads_head;
  __u32 tstate_next;
  __u32 tstate_native_thread_id;
  __u32 tstate_cframe;  // STACKSYM_PY_ABSENT: current_frame is in the thread state (3.13+)
  __u32 current_frame;
  __u32 code_adaptive;  // first code unit in the code object
  __u8 frame_code;      // offsets in a frame (all below STACKSYM_PY_FRAME_READ)
  __u8 frame_previous;
  __u8 frame_instr;
  __u8 frame_owner;
  __u8 frame_is_entry;  // 0xff: none (3.12+)
  __u8 shim_owner;      // owners from this value up are the evaluator's own frames (0xff: none)
  __u8 code_tag_bits;   // low bits of the code pointer that tag it (3.14)
  // The fingerprint's fields: STACKSYM_PY_CODE_READ bytes of the code object are read from
  // code_check_start; co_firstlineno and co_qualname at these offsets into them (0xff: no
  // fingerprint, frames go unchecked).
  __u8 check_first_line;
  __u32 code_check_start;
  __u8 check_qualname;
  __u8 pad[3];
};
#define STACKSYM_PY_CODE_READ 96
// A thread's state, found once (python_threads, by tid); tstate 0: none, looked for at
// checked_ns.
struct stacksym_python_thread {
  __u64 tstate;
  __u64 checked_ns;
  __u32 tgid;
  __u32 misses;  // searches in a row that found none (the next waits longer)
};

// --off-cpu: a target task's entry, from its switch-out to its switch-in: when and how it left,
// and what became of its stacks (STACKSYM_OFF_CPU_*): not taken (sampled out), in `record`
// (header and stacks of IPs, sent with the interval's length when it ends), or sent at once
// (stack copies: STACKSYM_SAMPLE_OFF_CPU_OPEN), or lost on the way.
#define STACKSYM_OFF_CPU_SAMPLED_OUT 1
#define STACKSYM_OFF_CPU_STORED 2
#define STACKSYM_OFF_CPU_OPENED 3
#define STACKSYM_OFF_CPU_OPEN_LOST 4
#define STACKSYM_OFF_CPU_RECORD_ROOM \
  (sizeof(struct stacksym_sample) + STACKSYM_KSTACK_ROOM + STACKSYM_PY_ROOM + STACKSYM_UIPS_ROOM)
// --call-graph bpf, --off-cpu: the task's last walk of its user stack, kept for its next
// switch-out. The walk is a function of the registers it starts from, the stack words it reads
// and the process's tables: when the registers are the same, every word read is read again
// and is the same, and the process's mappings were not written since (their generation), the
// walk would give the same IPs, so they are taken from here (a thread that blocks again where
// it blocked before). Walks that read more words than fit, or failed a read, are not kept.
#define STACKSYM_STACK_MEMO_READS 32  // power of two
struct stacksym_word_read {
  __u64 addr;
  __u64 value;
};
struct stacksym_stack_memo {
  __u64 pc, sp, bp;  // where the walk started
  __u32 generation;  // stacksym_proc_mappings.generation it walked with
  __u32 reads;       // entries of read[]
  __u32 frames;      // entries of ips[]
  __u16 end;         // STACKSYM_END_* of the walk
  __u8 valid;        // 0 until a walk is kept
  __u8 pad;
  __u64 lo;    // the lowest address read
  __u32 span;  // bytes from lo to the end of the highest word read
  __u32 pad2;
  struct stacksym_word_read read[STACKSYM_STACK_MEMO_READS];
  __u64 ips[STACKSYM_MAX_FRAMES + 1];
};
struct stacksym_off_cpu_task {
  __u64 start_ns;   // 0: no open interval
  __u64 opened_ns;  // STACKSYM_OFF_CPU_OPENED: the time_ns its records share
  __u32 state;      // STACKSYM_STATE_*
  __u32 kind;       // STACKSYM_OFF_CPU_*
  __u32 len;        // bytes in record
  __u32 summable;   // the record may be added up in a sums map (see below)
  __u8 record[STACKSYM_OFF_CPU_RECORD_ROOM];
  struct stacksym_stack_memo memo;
};

// --off-cpu: intervals whose user stack was unwound in BPF (or that have none) are added up in
// the kernel, in the hash map that the control map's `active` names (user space drains the
// other), keyed by a fingerprint of the record with the record itself in the value: a record
// whose fingerprint another record holds is compared whole, and sent through the ring buffer
// when it differs, as when the map is full. The record's time_ns and cpu are 0 there.
struct stacksym_off_cpu_key {
  __u64 fingerprint;
  __u32 tgid;
  __u32 tid;
};
struct stacksym_off_cpu_sum {
  __u64 ns;
  __u64 count;
  __u32 len;
  __u32 pad;
  __u8 record[STACKSYM_OFF_CPU_RECORD_ROOM];
};
struct stacksym_off_cpu_control {
  __u32 active;  // 0 or 1: the sums map the program adds to
};

// Why a BPF walk ended; same values as stacksym::UnwindEnd.
#define STACKSYM_END_OUTERMOST 0
#define STACKSYM_END_DEPTH 1
#define STACKSYM_END_READ_FAILED 3  // a bpf_probe_read_user failed (UnwindEnd kPageNotReadable)
#define STACKSYM_END_NO_CFI 4
#define STACKSYM_END_UNMAPPED 5
#define STACKSYM_END_BAD_CFA 6
#define STACKSYM_END_UNSUPPORTED 7

// --call-graph bpf: unwind tables in BPF maps. Rows of every loaded table are numbered as one
// array, stored in segments of STACKSYM_ROWS_PER_SEGMENT rows (stacksym_unwind_row has the
// layout of stacksym::UnwindRow); a table is a slice of it (it may span segments), shared
// by every process that maps the same file (by build ID). Each process has one
// stacksym_proc_mappings value: its executable mappings sorted by start.
struct stacksym_unwind_row {
  __u32 pc;  // relative to the table's base
  __u8 cfa_rule;
  __u8 ra_rule;
  __u8 rbp_rule;
  __u8 flags;
  __s32 cfa_offset;
  __s16 ra_offset;
  __s16 rbp_offset;
};

// Rows per segment of the rows map (1 MiB of rows; a power of two).
#define STACKSYM_ROWS_PER_SEGMENT 65536

#define STACKSYM_MAX_PROC_MAPPINGS 256  // power of two
struct stacksym_mapping {
  __u64 start;  // [start, end) in the process
  __u64 end;
  __u64 table_base;  // pc - table_base = the row pc (load bias + the table's base_pc)
  __u32 row_start;   // first row in the rows array
  __u32 row_count;   // 0: no table (frame pointers)
  __u32 table_end;   // rows cover row pcs below this
  __u32 pad;
};
struct stacksym_proc_mappings {
  __u32 count;
  __u32 generation;  // new at each write of the value (never 0): see stacksym_stack_memo
  struct stacksym_mapping m[STACKSYM_MAX_PROC_MAPPINGS];
};

// --call-graph dwarf: what the ustack part of a sample holds, followed by stack_bytes bytes
// copied from the user stack at sp upward.
struct stacksym_user_regs {
  __u64 ip;
  __u64 sp;
  __u64 bp;
  __u32 stack_bytes;  // bytes copied
  __u32 copy_flags;   // STACKSYM_COPY_*
};
#define STACKSYM_COPY_CUT 1u  // a page could not be read before the requested size was copied

// Same layout as the kernel's struct bpf_stack_build_id.
struct stacksym_build_id_frame {
  __s32 status;  // 0 empty, 1 valid (build ID + offset), 2 fallback (raw IP)
  unsigned char build_id[STACKSYM_BUILD_ID_SIZE];
  __u64 offset_or_ip;
};

// Per-CPU counters (one array element per CPU); user space sums them.
struct stacksym_counters {
  __u64 samples;              // samples that passed the target filter
  __u64 lost_ringbuf;         // ring buffer full: sample dropped
  __u64 kstack_errors;        // bpf_get_stack (kernel) returned an error
  __u64 ustack_errors;        // bpf_get_stack (user) returned an error
  __u64 stackmap_collisions;  // bpf_get_stackid returned -EEXIST (stack dropped)
  __u64 stackmap_errors;      // other bpf_get_stackid errors (except empty stacks)
  __u64 counts_map_full;      // stackmap backend: no room for a new (pid, tid, stacks) key
  __u64 stack_copy_bytes;     // --call-graph dwarf: user stack bytes copied
  __u64 stack_copy_cut;       // --call-graph dwarf: copies cut short at an unreadable page
  __u64 bpf_unwound;          // --call-graph bpf: samples unwound in the program
  __u64 bpf_unwind_frames;    // --call-graph bpf: user frames those walks gave
  __u64 bpf_fallback_copies;  // --call-graph bpf: samples sent as stack copies (no tables yet)
  __u64 bpf_unknown_mapping;  // --call-graph bpf: walks that met a pc outside loaded mappings
  __u64 ringbuf_bytes;        // bytes of samples written to the ring buffer
  // --off-cpu: intervals of target tasks closed at switch-in, and their nanoseconds, by fate:
  // shorter than the minimum (not stacked), sampled out, sent, or lost (ring buffer full).
  // Every closed interval is in exactly one of these.
  __u64 off_cpu_intervals;
  __u64 off_cpu_ns;
  __u64 off_cpu_filtered;
  __u64 off_cpu_filtered_ns;
  __u64 off_cpu_sampled_out;
  __u64 off_cpu_sampled_out_ns;
  __u64 off_cpu_sent;
  __u64 off_cpu_sent_ns;
  __u64 off_cpu_lost;
  __u64 off_cpu_lost_ns;
  __u64 off_cpu_untracked;  // switch-outs with no room for the task's entry: no interval
  __u64 off_cpu_summed;     // of the sent ones: added up in a sums map, not sent one by one
  __u64 off_cpu_summed_ns;
  __u64 off_cpu_unsummed;  // summable, but sent one by one: sums map full, or a collision
  __u64 py_samples;        // samples of registered Python processes
  __u64 py_frames;         // Python frames those samples carried
  __u64 py_ends[STACKSYM_PY_END_COUNT];  // why each Python walk ended
  __u64 py_thread_searches;   // thread-state lists walked (a thread's first sample, or stale)
  __u64 bpf_walk_memo_hits;   // --call-graph bpf: frames whose row came from the walk's memo
  __u64 bpf_stack_memo_hits;  // --off-cpu: user stacks taken from the task's last walk
};

// Key of the stackmap backend's in-kernel aggregation.
struct stacksym_stackmap_key {
  __u32 pid;
  __u32 tid;
  __s32 kstack_id;  // < 0: -errno (no stack, or dropped by collision)
  __s32 ustack_id;
  char comm[STACKSYM_COMM_LEN];
};
