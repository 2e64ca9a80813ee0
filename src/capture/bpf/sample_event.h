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

// sample flags
#define STACKSYM_SAMPLE_KTHREAD 1u        // kernel thread: no user stack expected
#define STACKSYM_SAMPLE_USER_BUILD_ID 2u  // ustack holds stacksym_build_id_frame entries

// A sample record in the ring buffer: this header, then kstack_bytes of u64 kernel IPs
// (innermost first), then ustack_bytes of user frames (u64 IPs, or build-ID frames).
struct stacksym_sample {
  __u64 time_ns;  // CLOCK_MONOTONIC (bpf_ktime_get_ns)
  __u32 pid;      // thread group id
  __u32 tid;
  __u32 cpu;
  __u32 flags;
  __s32 kstack_bytes;  // >= 0: bytes that follow; < 0: -errno from bpf_get_stack
  __s32 ustack_bytes;
  char comm[STACKSYM_COMM_LEN];
};

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
};

// Key of the stackmap backend's in-kernel aggregation.
struct stacksym_stackmap_key {
  __u32 pid;
  __u32 tid;
  __s32 kstack_id;  // < 0: -errno (no stack, or dropped by collision)
  __s32 ustack_id;
  char comm[STACKSYM_COMM_LEN];
};
