// Hand-declared stand-in for vmlinux.h, used when bpftool cannot dump the running kernel's
// BTF at build time. Field offsets are still relocated at load time (CO-RE), so this only
// needs the members the program touches.
#pragma once

#include <linux/bpf.h>
#include <linux/types.h>

typedef __u8 u8;
typedef __u32 u32;
typedef __s32 s32;
typedef __u64 u64;

struct bpf_perf_event_data;

struct task_struct {
  unsigned int __state;
  unsigned int flags;
  int pid;
  int tgid;
  void* mm;
} __attribute__((preserve_access_index));

struct pt_regs {
  unsigned long bp;
  unsigned long ip;
  unsigned long sp;
} __attribute__((preserve_access_index));
