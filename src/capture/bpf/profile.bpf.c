// stacksym's sampling programs, run on a perf event (cpu-clock or cycles) on every CPU.
//
// on_sample (default): copies the kernel and user stack of the interrupted task with
// bpf_get_stack into a per-CPU scratch buffer and sends header + both stacks, at their real
// length, through a BPF ring buffer. User space owns deduplication, so nothing collides.
// on_sample_stackmap (diagnostic): the classic bpf_get_stackid + STACK_TRACE map design,
// counting the stacks it drops to hash-bucket collisions (-EEXIST).
// on_fork / on_exit: keep the set of target processes up to date when following a command.
#ifdef STACKSYM_HAVE_VMLINUX_H
#include "vmlinux.h"
#else
#include "vmlinux_min.h"
#endif
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <stdbool.h>

#include "sample_event.h"

#define EEXIST 17
#define EFAULT 14
#define PF_KTHREAD 0x00200000

char LICENSE[] SEC("license") = "GPL";

// Set by user space before load (read-only after). __u8, not bool: the skeleton is C++ too.
const volatile __u8 filter_tgid = 0;    // only tgids in target_tgids (or tids below)
const volatile __u8 filter_tid = 0;     // only tids in target_tids (or tgids above)
const volatile __u8 filter_cgroup = 0;  // only tasks in cgroup target_cgroup_id (v2)
const volatile __u64 target_cgroup_id = 0;
const volatile __u8 follow_forks = 0;  // children of target tgids become targets
const volatile __u8 include_idle = 0;  // sample the idle task (pid 0)
const volatile __u8 kernel_stacks = 1;
const volatile __u8 user_stacks = 1;
const volatile __u8 user_build_ids = 0;  // BPF_F_USER_BUILD_ID
// Wake the reader only once this many bytes wait (it also polls on a timer): one wakeup per
// sample would cost a context switch per sample.
const volatile __u64 wakeup_bytes = 0;

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 8 << 20);  // resized by user space (--ringbuf-size)
} samples SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);
  __type(value, __u8);
} target_tgids SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 4096);
  __type(key, __u32);
  __type(value, __u8);
} target_tids SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct stacksym_counters);
} counters SEC(".maps");

#define SCRATCH_SIZE (sizeof(struct stacksym_sample) + STACKSYM_KSTACK_ROOM + STACKSYM_USTACK_ROOM)
struct scratch_buf {
  __u8 data[SCRATCH_SIZE];
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct scratch_buf);
} scratch SEC(".maps");

// Diagnostic backend maps; user space sets their sizes (tiny when unused).
struct {
  __uint(type, BPF_MAP_TYPE_STACK_TRACE);
  __uint(max_entries, 16384);
  __uint(key_size, sizeof(__u32));
  __uint(value_size, STACKSYM_MAX_FRAMES * sizeof(__u64));
} stackmap SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 65536);
  __type(key, struct stacksym_stackmap_key);
  __type(value, __u64);
} stack_counts SEC(".maps");

static __always_inline struct stacksym_counters* get_counters(void) {
  __u32 zero = 0;
  return bpf_map_lookup_elem(&counters, &zero);
}

// Whether the current task is one we sample.
static __always_inline bool is_target(__u32 tgid, __u32 tid) {
  if (tid == 0 && !include_idle) return false;
  if (filter_tgid || filter_tid) {
    bool hit = false;
    if (filter_tgid && bpf_map_lookup_elem(&target_tgids, &tgid)) hit = true;
    if (!hit && filter_tid && bpf_map_lookup_elem(&target_tids, &tid)) hit = true;
    if (!hit) return false;
  }
  if (filter_cgroup && bpf_get_current_cgroup_id() != target_cgroup_id) return false;
  return true;
}

SEC("perf_event")
int on_sample(struct bpf_perf_event_data* ctx) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  __u32 tgid = pid_tgid >> 32;
  __u32 tid = (__u32)pid_tgid;
  if (!is_target(tgid, tid)) return 0;

  struct stacksym_counters* cnt = get_counters();
  if (!cnt) return 0;
  cnt->samples++;

  __u32 zero = 0;
  struct scratch_buf* buf = bpf_map_lookup_elem(&scratch, &zero);
  if (!buf) return 0;
  struct stacksym_sample* s = (struct stacksym_sample*)buf->data;
  s->time_ns = bpf_ktime_get_ns();
  s->pid = tgid;
  s->tid = tid;
  s->cpu = bpf_get_smp_processor_id();
  s->flags = 0;
  struct task_struct* task = (struct task_struct*)bpf_get_current_task();
  if (BPF_CORE_READ(task, flags) & PF_KTHREAD) s->flags |= STACKSYM_SAMPLE_KTHREAD;
  bpf_get_current_comm(s->comm, sizeof(s->comm));

  long klen = 0;
  if (kernel_stacks) {
    klen = bpf_get_stack(ctx, buf->data + sizeof(*s), STACKSYM_MAX_FRAMES * sizeof(__u64), 0);
    if (klen < 0) {
      // An empty kernel stack (sample taken in user mode) is not an error.
      if (klen != -EFAULT) cnt->kstack_errors++;
      s->kstack_bytes = (__s32)klen;
      klen = 0;
    } else {
      s->kstack_bytes = (__s32)klen;
    }
  } else {
    s->kstack_bytes = 0;
  }
  klen &= (STACKSYM_KSTACK_ROOM - 1);

  long ulen = 0;
  if (user_stacks && !(s->flags & STACKSYM_SAMPLE_KTHREAD)) {
    void* dst = buf->data + sizeof(*s) + klen;
    if (user_build_ids) {
      s->flags |= STACKSYM_SAMPLE_USER_BUILD_ID;
      ulen = bpf_get_stack(ctx, dst, STACKSYM_MAX_FRAMES * sizeof(struct stacksym_build_id_frame),
                           BPF_F_USER_STACK | BPF_F_USER_BUILD_ID);
    } else {
      ulen = bpf_get_stack(ctx, dst, STACKSYM_MAX_FRAMES * sizeof(__u64), BPF_F_USER_STACK);
    }
    s->ustack_bytes = (__s32)ulen;
    if (ulen < 0) {
      if (ulen != -EFAULT) cnt->ustack_errors++;
      ulen = 0;
    }
  } else {
    s->ustack_bytes = 0;
  }
  ulen &= (STACKSYM_USTACK_ROOM - 1);

  __u64 len = sizeof(*s) + klen + ulen;
  if (len > SCRATCH_SIZE) return 0;  // cannot happen; keeps the verifier's bound explicit
  __u64 wake = bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) + len >= wakeup_bytes
                   ? BPF_RB_FORCE_WAKEUP
                   : BPF_RB_NO_WAKEUP;
  if (bpf_ringbuf_output(&samples, buf->data, len, wake) != 0) cnt->lost_ringbuf++;
  return 0;
}

SEC("perf_event")
int on_sample_stackmap(struct bpf_perf_event_data* ctx) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  __u32 tgid = pid_tgid >> 32;
  __u32 tid = (__u32)pid_tgid;
  if (!is_target(tgid, tid)) return 0;
  struct stacksym_counters* cnt = get_counters();
  if (!cnt) return 0;
  cnt->samples++;

  struct stacksym_stackmap_key key = {};
  key.pid = tgid;
  key.tid = tid;
  bpf_get_current_comm(key.comm, sizeof(key.comm));
  key.kstack_id = kernel_stacks ? bpf_get_stackid(ctx, &stackmap, 0) : -EFAULT;
  struct task_struct* task = (struct task_struct*)bpf_get_current_task();
  bool kthread = BPF_CORE_READ(task, flags) & PF_KTHREAD;
  key.ustack_id =
      (user_stacks && !kthread) ? bpf_get_stackid(ctx, &stackmap, BPF_F_USER_STACK) : -EFAULT;
  if (key.kstack_id == -EEXIST) cnt->stackmap_collisions++;
  if (key.ustack_id == -EEXIST) cnt->stackmap_collisions++;
  if (key.kstack_id < 0 && key.kstack_id != -EEXIST && key.kstack_id != -EFAULT)
    cnt->stackmap_errors++;
  if (key.ustack_id < 0 && key.ustack_id != -EEXIST && key.ustack_id != -EFAULT)
    cnt->stackmap_errors++;

  __u64* value = bpf_map_lookup_elem(&stack_counts, &key);
  if (value) {
    __sync_fetch_and_add(value, 1);
  } else {
    __u64 one = 1;
    if (bpf_map_update_elem(&stack_counts, &key, &one, BPF_NOEXIST) != 0) {
      value = bpf_map_lookup_elem(&stack_counts, &key);  // raced with another CPU
      if (value)
        __sync_fetch_and_add(value, 1);
      else
        cnt->counts_map_full++;
    }
  }
  return 0;
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct* parent, struct task_struct* child) {
  if (!follow_forks) return 0;
  __u32 parent_tgid = BPF_CORE_READ(parent, tgid);
  if (!bpf_map_lookup_elem(&target_tgids, &parent_tgid)) return 0;
  __u32 child_tgid = BPF_CORE_READ(child, tgid);
  __u8 one = 1;
  bpf_map_update_elem(&target_tgids, &child_tgid, &one, BPF_ANY);
  return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct* task) {
  if (!follow_forks) return 0;
  // Forget a followed process when its whole thread group is gone (the leader exits last
  // from the tracepoint's point of view only for single-threaded groups, so check the ids).
  __u32 pid = BPF_CORE_READ(task, pid);
  __u32 tgid = BPF_CORE_READ(task, tgid);
  if (pid == tgid) bpf_map_delete_elem(&target_tgids, &tgid);
  return 0;
}
