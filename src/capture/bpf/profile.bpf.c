// stacksym's sampling programs, run on a perf event (cpu-clock or cycles) on every CPU.
//
// on_sample (default): copies the kernel and user stack of the interrupted task with
// bpf_get_stack into a per-CPU scratch buffer and sends header + both stacks, at their real
// length, through a BPF ring buffer. User space owns deduplication, so nothing collides.
// on_sample_stackmap (diagnostic): the classic bpf_get_stackid + STACK_TRACE map design,
// counting the stacks it drops to hash-bucket collisions (-EEXIST).
// With bpf_unwind (--call-graph bpf), the user stack of a process whose unwind tables user
// space has loaded (proc_mappings, unwind_rows) is walked here, frame by frame in a bpf_loop
// callback, and sent as IPs; other processes' samples take the stack-copy path meanwhile.
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
// --call-graph dwarf: copy the user registers and up to this many bytes of user stack
// (0: frame-pointer stacks with bpf_get_stack).
const volatile __u32 stack_copy_size = 0;
// --call-graph bpf: unwind in the program from the tables in unwind_rows / proc_mappings.
const volatile __u8 bpf_unwind = 0;
// ... and send a stack copy after the IPs too (the differential test's verify mode).
const volatile __u8 bpf_unwind_verify = 0;
// --off-cpu: at each switch-out of a target task (sched_switch, the task still current) its
// stacks are taken, unless sampled out (kept with probability off_cpu_keep / 2^32; 0: all);
// when it is switched in, intervals at least off_cpu_min_ns long are sent with them. self_tgid
// (stacksym) is left out: its reader wakes for the records it reads.
const volatile __u64 off_cpu_min_ns = 0;
const volatile __u32 off_cpu_keep = 0;
const volatile __u32 self_tgid = 0;
// sched_switch passes prev's state as a fourth argument (Linux 5.18+), read before a concurrent
// wakeup could change prev->__state.
const volatile __u8 switch_has_prev_state = 0;
// Frames of the tracepoint's own call on top of a kernel stack taken at sched_switch.
const volatile __u32 off_cpu_kernel_skip = 0;
// Scratch buffers of the switch-outs: slots off_cpu_slot_base + cpu, apart from the samples',
// which an NMI (cycles) may take in the middle of a switch.
const volatile __u32 off_cpu_slot_base = 0;
// Wake the reader only once this many bytes wait (it also polls on a timer): one wakeup per
// sample would cost a context switch per sample.
const volatile __u64 wakeup_bytes = 0;
// Walk the Python frames of processes in python_procs (off with --no-python).
const volatile __u8 python = 0;

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

// --call-graph bpf: the rows of every loaded table, and each process's executable mappings.
// Row i is row i % STACKSYM_ROWS_PER_SEGMENT of segment i / STACKSYM_ROWS_PER_SEGMENT, an array
// user space creates when the first table reaches it: a recording holds kernel memory for the
// rows it loaded, not for its bound (which sets the number of segments). Tiny when unused.
struct unwind_rows_segment {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, STACKSYM_ROWS_PER_SEGMENT);
  __uint(key_size, sizeof(__u32));  // sizes: only a pointer to this struct reaches the BTF
  __uint(value_size, sizeof(struct stacksym_unwind_row));
};
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
  __uint(max_entries, 1);
  __type(key, __u32);
  __array(values, struct unwind_rows_segment);
} unwind_rows SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct stacksym_proc_mappings);
} proc_mappings SEC(".maps");

// --call-graph bpf: where the walk last found each (process, pc): the mapping's index in the
// process's mappings and the row's in its table. Most walks repeat the pcs of earlier ones (a
// thread that blocks again where it blocked before): a remembered place is checked against the
// maps as they are now (the mapping holds the pc, the row is the last one at or below it), so
// an entry that is stale, of another process or torn by an NMI costs a search, never a wrong
// row. Direct-mapped by a hash of (tgid, pc).
#define WALK_MEMO_ENTRIES 512  // power of two
struct walk_memo_entry {
  __u64 pc;
  __u32 tgid;
  __u32 place;  // row index in the table << 8 | mapping index (tables have < 2^24 rows)
};
struct walk_memo {
  struct walk_memo_entry e[WALK_MEMO_ENTRIES];
};
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct walk_memo);
} walk_memo SEC(".maps");

// Python processes user space registered (by tgid), and each of their threads' thread state
// once found (by tid). Sized by user space.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct stacksym_python_proc);
} python_procs SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_LRU_HASH);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct stacksym_python_thread);
} python_threads SEC(".maps");

// --off-cpu: target tasks' entries by tid, allocated as they first leave the CPU and deleted
// when they exit (their last switch-out); user space sets the size.
struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct stacksym_off_cpu_task);
} off_cpu_tasks SEC(".maps");

// --off-cpu: two maps of sums (user space sets their size) and the control map that says which
// one the program adds to.
struct off_cpu_sums_map {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __uint(max_entries, 1);
  __type(key, struct stacksym_off_cpu_key);
  __type(value, struct stacksym_off_cpu_sum);
} off_cpu_sums0 SEC(".maps"), off_cpu_sums1 SEC(".maps");
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
  __uint(max_entries, 2);
  __type(key, __u32);
  __array(values, struct off_cpu_sums_map);
} off_cpu_sums SEC(".maps") = {.values = {&off_cpu_sums0, &off_cpu_sums1}};
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct stacksym_off_cpu_control);
} off_cpu_control SEC(".maps");

// Header, kernel stack, Python frames, then either the user IPs or the user registers + stack
// copy (or, with bpf_unwind_verify, the unwound IPs and then the registers + copy). The
// copy is written in page-sized pieces at offsets below STACKSYM_STACK_COPY_ROOM, so a
// piece may run one page past it. At the end, where a Python frame is read before its fields
// are taken (any offset below 128 plus 8 bytes fits), then its code object's fingerprint
// fields (STACKSYM_PY_CODE_READ bytes at PY_CODE_TMP).
#define SAMPLE_ROOM (sizeof(struct stacksym_sample) + STACKSYM_KSTACK_ROOM + STACKSYM_PY_ROOM)
#define PY_TMP_ROOM 256
#define WALK_LOG_ROOM (STACKSYM_STACK_MEMO_READS * sizeof(struct stacksym_word_read))
#define SCRATCH_SIZE                                                      \
  (SAMPLE_ROOM + STACKSYM_UIPS_ROOM + sizeof(struct stacksym_user_regs) + \
   STACKSYM_STACK_COPY_ROOM + STACKSYM_PAGE_SIZE + WALK_LOG_ROOM + PY_TMP_ROOM)
#define PY_TMP (SCRATCH_SIZE - PY_TMP_ROOM)
#define WALK_LOG (PY_TMP - WALK_LOG_ROOM)  // the words an off-CPU walk read, for its memo
#define PY_CODE_TMP (PY_TMP + 128)
_Static_assert(128 + STACKSYM_PY_CODE_READ <= PY_TMP_ROOM, "code read fits");
struct scratch_buf {
  __u8 data[SCRATCH_SIZE];
};
// One buffer per CPU in a plain array (a per-CPU array's values are limited to 32 KiB);
// user space sets max_entries to the number of possible CPUs.
struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
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

// --call-graph dwarf: the interrupted task's user registers (the pt_regs saved on kernel
// entry, whether the sample hit user or kernel mode) and its user stack from RSP upward, in
// pieces that end at page boundaries: a piece that cannot be read (the end of the stack
// mapping, a page not resident) ends the copy, and what was read before it is kept.
// Writes at `base` (after the kernel stack and any unwound IPs); returns the bytes written.
// Global (not static): the verifier checks it once for any arguments, not at each call.
__noinline long copy_user_stack(struct scratch_buf* buf, __u64 base,
                                struct stacksym_counters* cnt) {
  if (!buf || !cnt || base > SAMPLE_ROOM + STACKSYM_UIPS_ROOM) return 0;
  struct stacksym_user_regs* r = (struct stacksym_user_regs*)(buf->data + base);
  struct task_struct* task = bpf_get_current_task_btf();
  struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(task);
  if (!regs) return 0;
  r->ip = BPF_CORE_READ(regs, ip);
  r->sp = BPF_CORE_READ(regs, sp);
  r->bp = BPF_CORE_READ(regs, bp);
  r->copy_flags = 0;
  __u8* dst = buf->data + base + sizeof(*r);
  __u64 addr = r->sp;
  __u64 want = stack_copy_size;
  if (want > STACKSYM_STACK_COPY_MAX) want = STACKSYM_STACK_COPY_MAX;
  __u64 done = 0;
  for (int i = 0; i < STACKSYM_STACK_COPY_ROOM / STACKSYM_PAGE_SIZE + 1; ++i) {
    if (done >= want) break;
    __u64 piece = STACKSYM_PAGE_SIZE - ((addr + done) & (STACKSYM_PAGE_SIZE - 1));
    if (piece > want - done) piece = want - done;
    // Bounds the verifier can see: 1..4096 bytes at an offset below the copy's room.
    piece &= 2 * STACKSYM_PAGE_SIZE - 1;
    if (piece == 0 || piece > STACKSYM_PAGE_SIZE) break;
    __u64 off = done & (STACKSYM_STACK_COPY_ROOM - 1);
    if (bpf_probe_read_user(dst + off, piece, (const void*)(addr + done)) != 0) {
      r->copy_flags |= STACKSYM_COPY_CUT;
      cnt->stack_copy_cut++;
      break;
    }
    done += piece;
  }
  r->stack_bytes = done;
  cnt->stack_copy_bytes += done;
  return sizeof(*r) + done;
}

// --call-graph bpf. Values of stacksym::CfaRule, RegRule and UnwindRowFlags.
#define CFA_UNDEFINED 0
#define CFA_RSP 1
#define CFA_RBP 2
#define CFA_DEREF_RSP 3
#define CFA_DEREF_RBP 4
#define CFA_PLT 5
#define REG_SAME 0
#define REG_UNDEFINED 1
#define REG_AT_CFA 2
#define REG_AT_RSP 3
#define REG_VAL_CFA 4
#define ROW_SIGNAL_FRAME 1
#define ROW_UNSUPPORTED_CFA 2
#define MAPPING_SEARCH_STEPS 9  // > log2(STACKSYM_MAX_PROC_MAPPINGS + 1)
#define ROW_SEARCH_STEPS 25     // tables have fewer than 2^24 rows (user space checks)

// The walk's state between bpf_loop steps (on the BPF stack of on_sample). It mirrors
// stacksym::UnwindStack (src/unwind/stack_unwinder.cc), which reads a copy instead of memory.
struct unwind_state {
  __u64 pc, sp, bp;
  __u64 base;  // offset of the IPs in the scratch buffer
  __u32 tgid;
  __u32 slot;  // the scratch buffer's
  __u32 n;     // IPs written
  __u32 end;   // STACKSYM_END_*
  __u8 bp_known;
  __u8 exact_pc;  // pc is the instruction itself (sampled, or interrupted by a signal)
  __u8 unknown_mapping;
  __u8 log_reads;   // write each word read at WALK_LOG (a walk to keep in a stack memo)
  __u8 log_full;    // more words were read than the log holds
  __u32 reads;      // words logged
  __u32 memo_hits;  // frames whose mapping and row came from walk_memo
};

static __always_inline void emit_ip(struct unwind_state* st, __u64 ip) {
  __u32 slot = st->slot;
  struct scratch_buf* buf = bpf_map_lookup_elem(&scratch, &slot);
  if (!buf) return;
  __u64 off = st->base + (__u64)(st->n & 127) * 8;
  if (off > SCRATCH_SIZE - 8) return;
  *(__u64*)(buf->data + off) = ip;
  st->n++;
}

// The trampoline of a signal frame was "returned to", not called: its pc is exact too.
static __always_inline void bump_last_ip(struct unwind_state* st) {
  __u32 slot = st->slot;
  struct scratch_buf* buf = bpf_map_lookup_elem(&scratch, &slot);
  if (!buf || st->n == 0) return;
  __u64 off = st->base + (__u64)((st->n - 1) & 127) * 8;
  if (off > SCRATCH_SIZE - 8) return;
  *(__u64*)(buf->data + off) += 1;
}

static __always_inline const struct stacksym_unwind_row* lookup_row(__u32 index) {
  __u32 segment = index / STACKSYM_ROWS_PER_SEGMENT;
  void* rows = bpf_map_lookup_elem(&unwind_rows, &segment);
  if (!rows) return NULL;
  __u32 at = index % STACKSYM_ROWS_PER_SEGMENT;
  return bpf_map_lookup_elem(rows, &at);
}

// One step of the mapping search (a bpf_loop callback, verified once, like the row search).
struct mapping_search {
  const struct stacksym_proc_mappings* pm;
  __u64 pc;
  __u32 lo, hi;
};
static long mapping_search_step(__u32 index, void* arg) {
  struct mapping_search* ms = arg;
  const struct stacksym_proc_mappings* pm = ms->pm;
  __u32 lo = ms->lo, hi = ms->hi;
  if (lo >= hi) return 1;
  __u32 mid = lo + (hi - lo) / 2;
  if (pm->m[mid & (STACKSYM_MAX_PROC_MAPPINGS - 1)].start <= ms->pc)
    ms->lo = mid + 1;
  else
    ms->hi = mid;
  return 0;
}

// The index of the mapping holding pc, or -1.
static __always_inline int find_mapping(const struct stacksym_proc_mappings* pm, __u64 pc) {
  __u32 count = pm->count;
  struct mapping_search ms = {
      .pm = pm,
      .pc = pc,
      .lo = 0,
      .hi = count > STACKSYM_MAX_PROC_MAPPINGS ? STACKSYM_MAX_PROC_MAPPINGS : count};
  bpf_loop(MAPPING_SEARCH_STEPS, mapping_search_step, &ms, 0);
  if (ms.lo == 0) return -1;
  __u32 index = (ms.lo - 1) & (STACKSYM_MAX_PROC_MAPPINGS - 1);
  return pc < pm->m[index].end ? (int)index : -1;
}

// Whether mapping `index` holds pc now (the mappings are sorted and disjoint: then it is the
// one find_mapping finds).
static __always_inline bool mapping_holds(const struct stacksym_proc_mappings* pm, __u32 index,
                                          __u64 pc) {
  if (index >= pm->count) return false;
  const struct stacksym_mapping* m = &pm->m[index & (STACKSYM_MAX_PROC_MAPPINGS - 1)];
  return m->start <= pc && pc < m->end;
}

// One step of the row search, as a bpf_loop callback: the verifier checks it once, instead of
// every step of an unrolled loop inside the frame step (which made loading the program take
// half a second of kernel CPU).
struct row_search {
  __u32 lo, hi;
  __u32 row_start;
  __u64 rel;
};
static long row_search_step(__u32 index, void* arg) {
  struct row_search* rs = arg;
  __u32 lo = rs->lo, hi = rs->hi;
  if (lo >= hi) return 1;
  __u32 mid = lo + (hi - lo) / 2;
  __u32 idx = rs->row_start + mid;
  const struct stacksym_unwind_row* r = lookup_row(idx);
  if (!r) {
    rs->lo = 0;  // not found
    rs->hi = 0;
    return 1;
  }
  if (r->pc <= rs->rel)
    rs->lo = mid + 1;
  else
    rs->hi = mid;
  return 0;
}

// Row `index` of m's table if it is the row in force at rel: the last one at or below it (what
// the search finds), else NULL.
static __always_inline const struct stacksym_unwind_row* row_if_in_force(
    const struct stacksym_mapping* m, __u32 index, __u64 rel) {
  if (index >= m->row_count) return NULL;
  const struct stacksym_unwind_row* r = lookup_row(m->row_start + index);
  if (!r || r->pc > rel) return NULL;
  if (index + 1 < m->row_count) {
    const struct stacksym_unwind_row* next = lookup_row(m->row_start + index + 1);
    if (!next || next->pc <= rel) return NULL;
  }
  return r;
}

// The row in force at pc (UnwindTable::Find), or NULL: row `*index` when it is (a remembered
// place), else searched for, and its index left in *index.
static __always_inline const struct stacksym_unwind_row* find_row(const struct stacksym_mapping* m,
                                                                  __u64 pc, __u32* index,
                                                                  bool* remembered) {
  if (m->row_count == 0 || pc < m->table_base) return NULL;
  __u64 rel = pc - m->table_base;
  if (rel >= m->table_end) return NULL;
  if (*remembered) {
    const struct stacksym_unwind_row* r = row_if_in_force(m, *index, rel);
    if (r) return r;
    *remembered = false;
  }
  struct row_search rs = {.lo = 0, .hi = m->row_count, .row_start = m->row_start, .rel = rel};
  bpf_loop(ROW_SEARCH_STEPS, row_search_step, &rs, 0);
  if (rs.lo == 0) return NULL;
  *index = rs.lo - 1;
  return lookup_row(rs.row_start + rs.lo - 1);
}

// The walk_memo entry of (tgid, pc), or NULL.
static __always_inline struct walk_memo_entry* memo_entry(__u32 tgid, __u64 pc) {
  __u32 zero = 0;
  struct walk_memo* memo = bpf_map_lookup_elem(&walk_memo, &zero);
  if (!memo) return NULL;
  __u64 h = (pc ^ ((__u64)tgid << 40)) * 0x9e3779b97f4a7c15ull;
  return &memo->e[(h >> 40) & (WALK_MEMO_ENTRIES - 1)];
}

// The mapping and row in force at pc (NULL when pc has no row), from walk_memo when its entry
// still holds, else searched for and remembered. *mapping < 0: pc is in no mapping.
static __always_inline const struct stacksym_unwind_row* place_of(
    struct unwind_state* st, const struct stacksym_proc_mappings* pm, __u64 pc, int* mapping) {
  struct walk_memo_entry* e = memo_entry(st->tgid, pc);
  __u32 place = e ? e->place : 0;
  bool remembered = e && e->pc == pc && e->tgid == st->tgid && mapping_holds(pm, place & 0xff, pc);
  *mapping = remembered ? (int)(place & 0xff) : find_mapping(pm, pc);
  if (*mapping < 0) return NULL;
  const struct stacksym_mapping* m = &pm->m[*mapping & (STACKSYM_MAX_PROC_MAPPINGS - 1)];
  __u32 row_index = place >> 8;
  const struct stacksym_unwind_row* row = find_row(m, pc, &row_index, &remembered);
  if (remembered) {
    st->memo_hits++;
  } else if (row && e && row_index < (1u << 24)) {
    e->pc = pc;
    e->tgid = st->tgid;
    e->place = row_index << 8 | (__u32)*mapping;
  }
  return row;
}

static __always_inline int read_word(__u64 addr, __u64* out) {
  __u64 v = 0;
  if (bpf_probe_read_user(&v, sizeof(v), (const void*)addr) != 0) return -1;
  *out = v;
  return 0;
}

// A word the walk reads: logged at WALK_LOG when the walk is to be kept (stacksym_stack_memo).
static __always_inline int walk_read(struct unwind_state* st, __u64 addr, __u64* out) {
  if (read_word(addr, out) != 0) return -1;
  if (!st->log_reads) return 0;
  __u32 slot = st->slot;
  struct scratch_buf* buf = bpf_map_lookup_elem(&scratch, &slot);
  if (!buf || st->reads >= STACKSYM_STACK_MEMO_READS) {
    st->log_full = 1;
    return 0;
  }
  struct stacksym_word_read* r = (struct stacksym_word_read*)(buf->data + WALK_LOG) +
                                 (st->reads & (STACKSYM_STACK_MEMO_READS - 1));
  r->addr = addr;
  r->value = *out;
  st->reads++;
  return 0;
}

// Where a caller's register is, by its rule: -1 when found, else the STACKSYM_END_* of the walk.
static __always_inline int apply_reg_rule(struct unwind_state* st, __u8 rule, __s16 offset,
                                          __u64 cfa, __u64 sp, __u64 same, __u64* out) {
  switch (rule) {
    case REG_SAME:
      *out = same;
      return -1;
    case REG_UNDEFINED:
      *out = 0;
      return -1;
    case REG_AT_CFA:
      return walk_read(st, cfa + (__u64)(__s64)offset, out) == 0 ? -1 : STACKSYM_END_READ_FAILED;
    case REG_AT_RSP:
      return walk_read(st, sp + (__u64)(__s64)offset, out) == 0 ? -1 : STACKSYM_END_READ_FAILED;
    case REG_VAL_CFA:
      *out = cfa + (__u64)(__s64)offset;
      return -1;
  }
  return STACKSYM_END_UNSUPPORTED;
}

// One frame: from (pc, sp, bp) to the caller's. Returns 1 to stop the walk.
// Global (not static): the verifier checks it once, for any state. As bpf_loop's callback
// itself it was checked in every state the walk's loop could reach: 54k instructions, 0.2 s.
__noinline int unwind_frame(struct unwind_state* st) {
  if (!st) return 1;
  if (st->n >= STACKSYM_MAX_FRAMES) {
    st->end = STACKSYM_END_DEPTH;
    return 1;
  }
  __u32 tgid = st->tgid;
  const struct stacksym_proc_mappings* pm = bpf_map_lookup_elem(&proc_mappings, &tgid);
  if (!pm) {
    st->end = STACKSYM_END_UNMAPPED;
    return 1;
  }
  __u64 pc = st->pc, sp = st->sp, bp = st->bp;
  __u64 lookup_pc = st->exact_pc ? pc : pc - 1;
  int mapping = -1;
  const struct stacksym_unwind_row* row = place_of(st, pm, lookup_pc, &mapping);
  if (mapping < 0) {
    // A return address outside every mapping is garbage, or code mapped since the tables
    // were loaded: not a frame; user space reloads the mappings.
    if (st->n > 1) st->n--;
    st->unknown_mapping = 1;
    st->end = STACKSYM_END_UNMAPPED;
    return 1;
  }
  __u64 cfa = 0, ra = 0, caller_bp = bp;
  bool signal = false;
  if (!row || row->cfa_rule == CFA_UNDEFINED) {
    if (row && (row->flags & ROW_UNSUPPORTED_CFA)) {
      st->end = STACKSYM_END_UNSUPPORTED;
      return 1;
    }
    // No CFI here: the frame-pointer convention.
    if (!st->bp_known || bp < sp || walk_read(st, bp + 8, &ra) != 0 ||
        walk_read(st, bp, &caller_bp) != 0) {
      st->end = STACKSYM_END_NO_CFI;
      return 1;
    }
    cfa = bp + 16;
  } else {
    __u64 off = (__u64)(__s64)row->cfa_offset;
    switch (row->cfa_rule) {
      case CFA_RSP:
        cfa = sp + off;
        break;
      case CFA_RBP:
        if (!st->bp_known) {
          st->end = STACKSYM_END_UNSUPPORTED;
          return 1;
        }
        cfa = bp + off;
        break;
      case CFA_DEREF_RSP:
        if (walk_read(st, sp + off, &cfa) != 0) {
          st->end = STACKSYM_END_READ_FAILED;
          return 1;
        }
        break;
      case CFA_DEREF_RBP:
        if (!st->bp_known) {
          st->end = STACKSYM_END_UNSUPPORTED;
          return 1;
        }
        if (walk_read(st, bp + off, &cfa) != 0) {
          st->end = STACKSYM_END_READ_FAILED;
          return 1;
        }
        break;
      case CFA_PLT:
        cfa = sp + off + ((pc & 15) >= (__u64)(__s64)row->rbp_offset ? 8 : 0);
        break;
      default:
        break;
    }
    __u8 ra_rule = row->ra_rule, rbp_rule = row->rbp_rule;
    if (ra_rule == REG_UNDEFINED) {
      st->end = STACKSYM_END_OUTERMOST;
      return 1;
    }
    if (ra_rule == REG_SAME) {
      st->end = STACKSYM_END_UNSUPPORTED;
      return 1;
    }
    int end = apply_reg_rule(st, ra_rule, row->ra_offset, cfa, sp, pc, &ra);
    if (end >= 0) {
      st->end = end;
      return 1;
    }
    if (row->cfa_rule == CFA_PLT) {
      caller_bp = bp;  // rbp_offset holds the PLT threshold; PLT stubs never touch RBP
    } else if (rbp_rule > REG_VAL_CFA) {
      st->bp_known = 0;  // only a problem if a caller's CFA is RBP-based
    } else {
      end = apply_reg_rule(st, rbp_rule, row->rbp_offset, cfa, sp, bp, &caller_bp);
      if (end >= 0) {
        st->end = end;
        return 1;
      }
      if (rbp_rule != REG_SAME) st->bp_known = 1;
    }
    signal = (row->flags & ROW_SIGNAL_FRAME) != 0;
    if (signal && !st->exact_pc) bump_last_ip(st);
  }
  if (ra == 0) {
    st->end = STACKSYM_END_OUTERMOST;
    return 1;
  }
  // Each caller's frame lies above its callee's; only a signal frame may switch stacks.
  if (!signal && cfa <= sp) {
    st->end = STACKSYM_END_BAD_CFA;
    return 1;
  }
  emit_ip(st, signal ? ra + 1 : ra);
  st->pc = ra;
  st->sp = cfa;
  st->bp = caller_bp;
  st->exact_pc = signal;
  return 0;
}

static long unwind_step(__u32 index, void* arg) { return unwind_frame(arg) ? 1 : 0; }

// Words of a kept walk within this many bytes of each other are read again in one read, into
// the stack copy's room of the scratch buffer (unused until the walk is done); else one by one.
#define MEMO_SPAN_MAX 2048
#define MEMO_SPAN_AT (SAMPLE_ROOM + STACKSYM_UIPS_ROOM + sizeof(struct stacksym_user_regs))
_Static_assert(MEMO_SPAN_MAX * 2 <= STACKSYM_STACK_COPY_ROOM, "the span fits the copy's room");

// Whether the walk kept in `m` is the walk from st's registers now: the same registers and
// mappings, and every word it read still holds what it read. Global: verified once.
__noinline int stack_memo_holds(const struct stacksym_stack_memo* m, struct scratch_buf* buf,
                                const struct unwind_state* st, __u32 generation) {
  if (!m || !buf || !st || !m->valid || m->pc != st->pc || m->sp != st->sp || m->bp != st->bp ||
      m->generation != generation) {
    return 0;
  }
  __u32 n = m->reads;
  __u32 span = m->span;
  __u64 lo = m->lo;
  if (span >= 8 && span <= MEMO_SPAN_MAX) {
    __u8* copy = buf->data + MEMO_SPAN_AT;
    // The mask changes nothing but gives the verifier the bound the compiler hid from it.
    __u32 size = span;
    barrier_var(size);
    size &= 2 * MEMO_SPAN_MAX - 1;
    if (bpf_probe_read_user(copy, size, (const void*)lo) != 0) return 0;
    for (__u32 i = 0; i < STACKSYM_STACK_MEMO_READS; ++i) {
      if (i >= n) break;
      __u64 off = m->read[i].addr - lo;
      if (off > span - 8) return 0;
      if (*(__u64*)(copy + (off & (MEMO_SPAN_MAX - 1))) != m->read[i].value) return 0;
    }
    return 1;
  }
  for (__u32 i = 0; i < STACKSYM_STACK_MEMO_READS; ++i) {
    if (i >= n) break;
    __u64 v = 0;
    if (read_word(m->read[i].addr, &v) != 0 || v != m->read[i].value) return 0;
  }
  return 1;
}

// Keeps the walk just done (its IPs at st->base, its reads at WALK_LOG) in `m`, or marks `m`
// empty when the walk cannot be replayed: more reads than the log holds, a failed read, or a
// pc in no loaded mapping (the mappings are to be reloaded).
static __always_inline void keep_walk(struct stacksym_stack_memo* m, struct scratch_buf* buf,
                                      const struct unwind_state* st, __u64 pc, __u64 sp, __u64 bp,
                                      __u32 generation, __u32 n) {
  __u64 base = st->base;
  if (!buf || st->log_full || st->unknown_mapping || st->end == STACKSYM_END_READ_FAILED ||
      n > STACKSYM_MAX_FRAMES || base > SAMPLE_ROOM) {
    m->valid = 0;
    return;
  }
  m->pc = pc;
  m->sp = sp;
  m->bp = bp;
  m->generation = generation;
  m->reads = st->reads;
  m->frames = n;
  m->end = st->end;
  bpf_probe_read_kernel(m->read, sizeof(m->read), buf->data + WALK_LOG);
  bpf_probe_read_kernel(m->ips, (n & STACKSYM_MAX_FRAMES) * 8, buf->data + base);
  // The span of the words read: one read checks them all next time (stack_memo_holds).
  __u64 lo = ~0ull, hi = 0;
  __u32 reads = st->reads;
  for (__u32 i = 0; i < STACKSYM_STACK_MEMO_READS; ++i) {
    if (i >= reads) break;
    __u64 a = m->read[i].addr;
    if (a < lo) lo = a;
    if (a > hi) hi = a;
  }
  m->lo = lo;
  m->span = reads > 0 && hi - lo < MEMO_SPAN_MAX ? (__u32)(hi - lo + 8) : 0;
  m->valid = 1;
}

// The IPs of the walk kept in `m`, written at `base` as the walk would; returns their number.
static __always_inline __u32 replay_walk(const struct stacksym_stack_memo* m,
                                         struct scratch_buf* buf, __u64 base,
                                         struct stacksym_sample* s) {
  __u32 n = m->frames;
  if (!buf || n > STACKSYM_MAX_FRAMES || base > SAMPLE_ROOM) return 0;
  bpf_probe_read_kernel(buf->data + base, (n & STACKSYM_MAX_FRAMES) * 8, m->ips);
  s->unwind_end = m->end;
  return n;
}

// --call-graph bpf: walks the user stack of the current task into scratch buffer `slot` at
// `base`; returns the number of IPs. With a memo (a switch-out), the task's last walk is
// replayed when it holds (stack_memo_holds), and a new walk is kept there.
static __always_inline __u32 unwind_user(__u32 slot, __u64 base, struct stacksym_sample* s,
                                         struct stacksym_counters* cnt,
                                         struct stacksym_stack_memo* memo, __u32 generation) {
  struct task_struct* task = bpf_get_current_task_btf();
  struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(task);
  s->unwind_end = STACKSYM_END_UNMAPPED;
  if (!regs) return 0;
  struct unwind_state st = {};
  st.pc = BPF_CORE_READ(regs, ip);
  st.sp = BPF_CORE_READ(regs, sp);
  st.bp = BPF_CORE_READ(regs, bp);
  st.base = base;
  st.tgid = s->pid;
  st.slot = slot;
  st.bp_known = 1;
  st.exact_pc = 1;
  st.end = STACKSYM_END_DEPTH;
  if (st.pc == 0) return 0;
  __u64 pc = st.pc, sp = st.sp, bp = st.bp;
  // Only a switch-out keeps a walk (samples pass no memo): the scratch buffer's log and room.
  struct scratch_buf* buf = memo ? bpf_map_lookup_elem(&scratch, &slot) : NULL;
  if (memo && stack_memo_holds(memo, buf, &st, generation)) {
    cnt->bpf_stack_memo_hits++;
    return replay_walk(memo, buf, base, s);
  }
  st.log_reads = memo != NULL;
  emit_ip(&st, st.pc);
  bpf_loop(STACKSYM_MAX_FRAMES, unwind_step, &st, 0);
  s->unwind_end = st.end;
  cnt->bpf_walk_memo_hits += st.memo_hits;
  if (st.unknown_mapping) {
    s->flags |= STACKSYM_SAMPLE_UNKNOWN_MAPPING;
    cnt->bpf_unknown_mapping++;
  }
  __u32 n = st.n > STACKSYM_MAX_FRAMES ? STACKSYM_MAX_FRAMES : st.n;
  if (memo) keep_walk(memo, buf, &st, pc, sp, bp, generation, n);
  return n;
}

// --- Python frames (see interp/python/frame_walk.h, the same walk in user space) ---

// A thread found without a thread state is looked for again after 2 ms, then 4, 8, ... at most
// this long (a new thread gets its native id a moment after its first instructions).
#define PY_NO_THREAD_RETRY_NS 200000000ull
#define PY_NO_THREAD_FIRST_RETRY_NS 2000000ull
#define PY_MAX_THREAD_STEPS 256  // thread states and interpreters looked at per search

struct tstate_search {
  __u64 interp;
  __u64 tstate;
  __u64 found;
  __u64 found_interp;
  __u64 tid;
  __u32 interp_next, interp_threads_head, tstate_next, tstate_native_thread_id;
  __u8 failed;
};

// One thread state (or a step to the next interpreter) of the search for this thread's. A
// thread that made a sub-interpreter has a thread state in it too: the match in the oldest
// interpreter (the list's last; the main one) is the thread's own, the one it runs outside
// sub-interpreters (walk_python finds a sub-interpreter's running above it).
static long tstate_search_step(__u32 index, void* arg) {
  struct tstate_search* ts = arg;
  __u64 next = 0;
  if (ts->tstate == 0) {
    if (ts->interp == 0 || read_word(ts->interp + ts->interp_next, &next) != 0) return 1;
    ts->interp = next;
    if (next == 0) return 1;
    if (read_word(next + ts->interp_threads_head, &ts->tstate) != 0) {
      ts->failed = 1;
      return 1;
    }
    return 0;
  }
  __u64 id = 0;
  if (read_word(ts->tstate + ts->tstate_native_thread_id, &id) != 0 ||
      read_word(ts->tstate + ts->tstate_next, &next) != 0) {
    ts->failed = 1;
    return 1;
  }
  if (id == ts->tid && ts->found_interp != ts->interp) {
    ts->found = ts->tstate;  // its interpreter's first (newest) match: the live one
    ts->found_interp = ts->interp;
  }
  ts->tstate = next;
  return 0;
}

// This thread's PyThreadState: remembered (checked by its native id), else searched for in
// every interpreter's list. 0: none (*failed: its memory could not be read).
static __always_inline __u64 find_tstate(const struct stacksym_python_proc* proc, __u32 tgid,
                                         __u32 tid, struct stacksym_counters* cnt, bool* failed) {
  __u64 now = bpf_ktime_get_ns();
  struct stacksym_python_thread* known = bpf_map_lookup_elem(&python_threads, &tid);
  if (known && known->tgid == tgid) {
    __u64 id = 0;
    if (known->tstate != 0 && read_word(known->tstate + proc->tstate_native_thread_id, &id) == 0 &&
        id == tid) {
      return known->tstate;
    }
    if (known->tstate == 0) {
      // 2 ms, 4, 8, ... up to PY_NO_THREAD_RETRY_NS: the main thread of a process registered
      // as soon as its libpython was mapped has its thread state a few ms later.
      __u32 misses = known->misses < 7 ? known->misses : 7;
      __u64 wait = PY_NO_THREAD_FIRST_RETRY_NS << misses;
      if (wait > PY_NO_THREAD_RETRY_NS) wait = PY_NO_THREAD_RETRY_NS;
      if (now - known->checked_ns < wait) return 0;
    }
  }
  cnt->py_thread_searches++;
  struct tstate_search ts = {};
  ts.tid = tid;
  ts.interp_next = proc->interp_next;
  ts.interp_threads_head = proc->interp_threads_head;
  ts.tstate_next = proc->tstate_next;
  ts.tstate_native_thread_id = proc->tstate_native_thread_id;
  if (read_word(proc->interpreters_head, &ts.interp) != 0) {
    *failed = true;
    return 0;
  }
  if (ts.interp != 0 && read_word(ts.interp + ts.interp_threads_head, &ts.tstate) != 0) {
    *failed = true;
    return 0;
  }
  bpf_loop(PY_MAX_THREAD_STEPS, tstate_search_step, &ts, 0);
  *failed = ts.failed && ts.found == 0;
  struct stacksym_python_thread entry = {.tstate = ts.found, .checked_ns = now, .tgid = tgid};
  if (ts.found == 0 && known && known->tgid == tgid && known->tstate == 0) {
    entry.misses = known->misses + 1;
  }
  bpf_map_update_elem(&python_threads, &tid, &entry, BPF_ANY);
  return ts.found;
}

// The walk's state between bpf_loop steps; the offsets come from the process's registration.
struct py_walk {
  __u64 frame;  // the next frame to read
  __u64 base;   // offset of the frames in the scratch buffer
  __u32 slot;   // the scratch buffer's
  __u32 n;      // frames written
  __u32 end;    // STACKSYM_PY_END_*
  __u32 code_adaptive;
  __u32 code_check_start;
  __u32 last_check;  // the fingerprint flags of last_code, the previous frame's code object
  __u64 last_code;
  __u8 frame_code, frame_previous, frame_instr, frame_owner, frame_is_entry, shim_owner;
  __u8 code_tag_bits, check_first_line, check_qualname;
};

// The fingerprint of the code object at `code` (stacksym_py_code_check) as flag bits; 0 (not
// checked) when the process registered none or the object cannot be read. Read once for a run
// of frames of one code object (a recursion).
static __always_inline __u32 code_check_flags(struct py_walk* w, __u8* tmp, __u64 code) {
  if (w->check_first_line == 0xff) return 0;
  if (code == w->last_code) return w->last_check;
  __u32 flags = 0;
  if (!bpf_probe_read_user(tmp, STACKSYM_PY_CODE_READ, (const void*)(code + w->code_check_start))) {
    __s32 first_line = *(__s32*)(tmp + (w->check_first_line & 63));
    __u64 qualname = *(__u64*)(tmp + (w->check_qualname & 63));
    flags = STACKSYM_PY_CHECKED | stacksym_py_code_check(first_line, qualname)
                                      << STACKSYM_PY_CHECK_SHIFT;
  }
  w->last_code = code;
  w->last_check = flags;
  return flags;
}

// One frame: read it whole, write (code, instruction, flags), move to the previous one.
// Global (not static): verified once, for any state, like unwind_frame.
__noinline int python_frame_step(struct py_walk* w) {
  if (!w) return 1;
  if (w->frame == 0) {
    w->end = STACKSYM_PY_END_OUTERMOST;
    return 1;
  }
  if (w->n >= STACKSYM_MAX_PY_FRAMES) {
    w->end = STACKSYM_PY_END_DEPTH;
    return 1;
  }
  __u32 slot = w->slot;
  struct scratch_buf* buf = bpf_map_lookup_elem(&scratch, &slot);
  if (!buf) return 1;
  __u8* f = buf->data + PY_TMP;
  if (bpf_probe_read_user(f, STACKSYM_PY_FRAME_READ, (const void*)w->frame) != 0) {
    w->end = STACKSYM_PY_END_READ_FAILED;
    return 1;
  }
  __u8 owner = f[w->frame_owner & 127];
  __u64 previous = *(__u64*)(f + (w->frame_previous & 127));
  if (owner >= w->shim_owner) {
    // The evaluator's own frame (3.12+): the Python frame before it was its call's outermost.
    if (w->n > 0) {
      __u64 last = w->base + (__u64)((w->n - 1) & (STACKSYM_MAX_PY_FRAMES - 1)) * 16;
      if (last <= SCRATCH_SIZE - 16) {
        ((struct stacksym_py_frame*)(buf->data + last))->flags |= STACKSYM_PY_ENTRY;
      }
    }
    w->frame = previous;
    return 0;
  }
  __u64 code = *(__u64*)(f + (w->frame_code & 127)) & ~(__u64)w->code_tag_bits;
  __u64 ip = *(__u64*)(f + (w->frame_instr & 127));
  __u64 first = code + w->code_adaptive;
  __s32 index = -1;
  if (ip >= first && ip - first < (1ull << 31)) index = (__s32)((ip - first) >> 1);
  __u32 flags = (__u32)owner << 8 | code_check_flags(w, buf->data + PY_CODE_TMP, code);
  if (w->frame_is_entry != 0xff && f[w->frame_is_entry & 127]) flags |= STACKSYM_PY_ENTRY;
  __u64 off = w->base + (__u64)(w->n & (STACKSYM_MAX_PY_FRAMES - 1)) * 16;
  if (off > SCRATCH_SIZE - 16) return 1;
  struct stacksym_py_frame* out = (struct stacksym_py_frame*)(buf->data + off);
  out->code = code;
  out->instruction = index;
  out->flags = flags;
  w->n++;
  w->frame = previous;
  return 0;
}

static long python_step(__u32 index, void* arg) { return python_frame_step(arg) ? 1 : 0; }

// The innermost frame of thread state `tstate`: through its _PyCFrame (3.11, 3.12; *holder, none
// when no Python runs), or in the thread state itself (3.13+). False when unreadable.
static __always_inline bool innermost_frame(const struct stacksym_python_proc* proc, __u64 tstate,
                                            __u64* holder, __u64* frame) {
  *holder = tstate;
  *frame = 0;
  if (proc->tstate_cframe != STACKSYM_PY_ABSENT &&
      read_word(tstate + proc->tstate_cframe, holder) != 0) {
    return false;
  }
  return *holder == 0 || read_word(*holder + proc->current_frame, frame) == 0;
}

// Whether thread state `tstate` runs nested on this thread: not `own`, and its _PyCFrame on this
// thread's stack between the stack pointer `sp` and `own_cframe` (deeper in the same stack;
// another thread's _PyCFrame lies on that thread's stack, outside the range).
static __always_inline bool runs_nested(const struct stacksym_python_proc* proc, __u64 tstate,
                                        __u64 own, __u64 own_cframe, __u64 sp) {
  __u64 cframe = 0;
  if (tstate == 0 || tstate == own) return false;
  if (read_word(tstate + proc->tstate_cframe, &cframe) != 0) return false;
  return sp <= cframe && cframe < own_cframe;
}

// 3.11: a sub-interpreter's thread state running on this thread inside its own (`own`, whose
// running evaluator's _PyCFrame is `own_cframe`), or 0. Running Python it holds the GIL; waiting
// (a switch-out in time.sleep, a lock) it has just dropped it, and is the GIL's last holder.
static __always_inline __u64 nested_tstate(const struct stacksym_python_proc* proc, __u64 own,
                                           __u64 own_cframe) {
  if (proc->tstate_current == 0 || proc->tstate_cframe == STACKSYM_PY_ABSENT) return 0;
  __u64 holder = 0;
  // Own holds the GIL: nothing else runs on this thread.
  if (read_word(proc->tstate_current, &holder) != 0 || holder == own) return 0;
  struct pt_regs* regs = (struct pt_regs*)bpf_task_pt_regs(bpf_get_current_task_btf());
  if (!regs) return 0;
  __u64 sp = BPF_CORE_READ(regs, sp);
  if (runs_nested(proc, holder, own, own_cframe, sp)) return holder;
  __u64 last = 0;
  if (proc->gil_last_holder == 0 || read_word(proc->gil_last_holder, &last) != 0) return 0;
  return last != holder && runs_nested(proc, last, own, own_cframe, sp) ? last : 0;
}

// The Python frames of the current thread, written at `base` of scratch buffer `slot` (`buf`,
// whose header is filled in); returns how many (0 when the process is not a registered Python
// process). Those of a sub-interpreter it runs come first, then its own. Global (not static):
// verified once, for any state, rather than inlined into both the sample and the switch path.
__noinline __u32 walk_python(struct scratch_buf* buf, __u32 slot, __u64 base,
                             struct stacksym_counters* cnt) {
  if (!buf || !cnt) return 0;
  struct stacksym_sample* s = (struct stacksym_sample*)buf->data;
  __u32 tgid = s->pid;
  const struct stacksym_python_proc* proc = bpf_map_lookup_elem(&python_procs, &tgid);
  if (!proc) return 0;
  s->flags |= STACKSYM_SAMPLE_PYTHON;
  cnt->py_samples++;
  bool failed = false;
  __u64 tstate = find_tstate(proc, tgid, s->tid, cnt, &failed);
  struct py_walk w = {};
  w.end = failed ? STACKSYM_PY_END_READ_FAILED : STACKSYM_PY_END_NO_THREAD;
  __u64 own_frame = 0, nested_frame = 0;
  if (tstate != 0) {
    __u64 holder = 0, nested_holder = 0;
    bool ok = innermost_frame(proc, tstate, &holder, &own_frame);
    __u64 nested = ok && own_frame != 0 ? nested_tstate(proc, tstate, holder) : 0;
    if (nested != 0 && !innermost_frame(proc, nested, &nested_holder, &nested_frame)) {
      nested_frame = 0;
    }
    w.end = ok ? STACKSYM_PY_END_OUTERMOST : STACKSYM_PY_END_READ_FAILED;
  }
  if (w.end == STACKSYM_PY_END_OUTERMOST && own_frame != 0) {
    w.base = base;
    w.slot = slot;
    w.code_adaptive = proc->code_adaptive;
    w.frame_code = proc->frame_code;
    w.frame_previous = proc->frame_previous;
    w.frame_instr = proc->frame_instr;
    w.frame_owner = proc->frame_owner;
    w.frame_is_entry = proc->frame_is_entry;
    w.shim_owner = proc->shim_owner;
    w.code_tag_bits = proc->code_tag_bits;
    w.code_check_start = proc->code_check_start;
    w.check_first_line = proc->check_first_line;
    w.check_qualname = proc->check_qualname;
    if (nested_frame != 0) {
      w.frame = nested_frame;
      w.end = STACKSYM_PY_END_DEPTH;
      bpf_loop(STACKSYM_MAX_PY_FRAMES + 16, python_step, &w, 0);
    }
    if (w.end == STACKSYM_PY_END_OUTERMOST || nested_frame == 0) {
      w.frame = own_frame;
      w.end = STACKSYM_PY_END_DEPTH;
      bpf_loop(STACKSYM_MAX_PY_FRAMES + 16, python_step, &w, 0);
    }
  }
  __u32 n = w.n > STACKSYM_MAX_PY_FRAMES ? STACKSYM_MAX_PY_FRAMES : w.n;
  s->py_frames = n;
  s->py_end = w.end;
  cnt->py_frames += n;
  if (w.end < STACKSYM_PY_END_COUNT) cnt->py_ends[w.end & 3]++;
  return n;
}

// The header of a record: who, when, and what kind (flags).
static __always_inline void fill_header(struct stacksym_sample* s, __u32 tgid, __u32 tid,
                                        __u32 flags) {
  s->time_ns = bpf_ktime_get_ns();
  s->pid = tgid;
  s->tid = tid;
  s->cpu = bpf_get_smp_processor_id();
  s->flags = flags;
  s->unwind_frames = 0;
  s->unwind_end = 0;
  s->off_cpu_ns = 0;
  s->py_frames = 0;
  s->py_end = 0;
  struct task_struct* task = (struct task_struct*)bpf_get_current_task();
  if (BPF_CORE_READ(task, flags) & PF_KTHREAD) s->flags |= STACKSYM_SAMPLE_KTHREAD;
  bpf_get_current_comm(s->comm, sizeof(s->comm));
}

// The kernel stack after the header without its `skip` top frames; returns its bytes (masked
// for the verifier).
static __always_inline long take_kernel_stack(void* ctx, struct scratch_buf* buf, __u64 skip,
                                              struct stacksym_counters* cnt) {
  struct stacksym_sample* s = (struct stacksym_sample*)buf->data;
  if (!kernel_stacks) {
    s->kstack_bytes = 0;
    return 0;
  }
  long klen = bpf_get_stack(ctx, buf->data + sizeof(*s), STACKSYM_MAX_FRAMES * sizeof(__u64),
                            skip & BPF_F_SKIP_FIELD_MASK);
  s->kstack_bytes = (__s32)klen;
  if (klen < 0) {
    // An empty kernel stack (sample taken in user mode) is not an error.
    if (klen != -EFAULT) cnt->kstack_errors++;
    klen = 0;
  }
  return klen & (STACKSYM_KSTACK_ROOM - 1);
}

// Python frames after the kernel stack, at `base` (they live on the heap: walked here whatever
// the call graph). Returns their bytes.
static __always_inline __u64 take_python_frames(struct scratch_buf* buf, __u32 slot, __u64 base,
                                                struct stacksym_counters* cnt) {
  struct stacksym_sample* s = (struct stacksym_sample*)buf->data;
  if (!python || !user_stacks || (s->flags & STACKSYM_SAMPLE_KTHREAD)) return 0;
  __u32 n = walk_python(buf, slot, base, cnt) & (2 * STACKSYM_MAX_PY_FRAMES - 1);
  if (n > STACKSYM_MAX_PY_FRAMES) n = STACKSYM_MAX_PY_FRAMES;
  return (__u64)n * sizeof(struct stacksym_py_frame);
}

// The user stack at `ubase`: unwound here when the process's tables are loaded, else a stack
// copy (dwarf, or bpf until the tables are loaded) or a frame-pointer chain. Returns its bytes.
static __always_inline long take_user_stack(void* ctx, struct scratch_buf* buf, __u32 slot,
                                            __u64 ubase, struct stacksym_counters* cnt,
                                            struct stacksym_stack_memo* memo) {
  struct stacksym_sample* s = (struct stacksym_sample*)buf->data;
  __u32 tgid = s->pid;
  if (!user_stacks || (s->flags & STACKSYM_SAMPLE_KTHREAD)) {
    s->ustack_bytes = 0;
    return 0;
  }
  long ulen = 0;
  bool unwound = false;
  const struct stacksym_proc_mappings* pm =
      bpf_unwind ? bpf_map_lookup_elem(&proc_mappings, &tgid) : NULL;
  if (pm) {
    __u32 n = unwind_user(slot, ubase, s, cnt, memo, pm->generation);
    // The walk met a pc in no loaded mapping (dlopen or exec since the tables were loaded, or
    // a garbage return address): send a stack copy instead, so that the stack stays complete,
    // flagged so that user space reloads the mappings.
    unwound = !(s->flags & STACKSYM_SAMPLE_UNKNOWN_MAPPING);
    if (unwound) {
      s->unwind_frames = n;
      s->flags |= STACKSYM_SAMPLE_BPF_UNWOUND;
      cnt->bpf_unwound++;
      cnt->bpf_unwind_frames += n;
    }
  }
  if (unwound) {
    ulen = (s->unwind_frames * 8) & (STACKSYM_UIPS_ROOM - 1);
    if (bpf_unwind_verify && stack_copy_size > 0) {
      s->flags |= STACKSYM_SAMPLE_STACK_COPY;
      ulen += copy_user_stack(buf, ubase + ulen, cnt);
    }
  } else if (stack_copy_size > 0) {
    s->flags |= STACKSYM_SAMPLE_STACK_COPY;
    if (bpf_unwind) cnt->bpf_fallback_copies++;
    ulen = copy_user_stack(buf, ubase, cnt);
  } else {
    void* dst = buf->data + ubase;
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
    return ulen & (STACKSYM_USTACK_ROOM - 1);
  }
  s->ustack_bytes = (__s32)ulen;
  if (!(s->flags & STACKSYM_SAMPLE_STACK_COPY)) ulen &= (STACKSYM_USTACK_ROOM - 1);
  return ulen;
}

// The current task's record in scratch buffer `slot`: header, then its kernel stack (without
// `kernel_skip` frames), its Python frames and user stack. At a switch-out too: the task is
// still current there, so its thread state is found as in a sample, and an off-CPU record
// names the Python function that waits. Returns the record's length, 0 when there is none.
static __always_inline __u64 build_record(void* ctx, struct stacksym_counters* cnt, __u32 slot,
                                          __u32 tgid, __u32 tid, __u32 flags, __u64 kernel_skip,
                                          struct stacksym_stack_memo* memo) {
  struct scratch_buf* buf = bpf_map_lookup_elem(&scratch, &slot);
  if (!buf) return 0;
  struct stacksym_sample* s = (struct stacksym_sample*)buf->data;
  fill_header(s, tgid, tid, flags);
  long klen = take_kernel_stack(ctx, buf, kernel_skip, cnt);
  __u64 plen = take_python_frames(buf, slot, sizeof(*s) + klen, cnt);
  long ulen = take_user_stack(ctx, buf, slot, sizeof(*s) + klen + plen, cnt, memo);
  __u64 len = sizeof(*s) + klen + plen + ulen;
  return len > SCRATCH_SIZE ? 0 : len;  // cannot be larger; keeps the verifier's bound explicit
}

// Sends `len` bytes at `data` through the ring buffer, waking the reader once a batch waits.
static __always_inline long output_record(void* data, __u64 len, struct stacksym_counters* cnt) {
  __u64 wake = bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) + len >= wakeup_bytes
                   ? BPF_RB_FORCE_WAKEUP
                   : BPF_RB_NO_WAKEUP;
  long err = bpf_ringbuf_output(&samples, data, len, wake);
  if (err == 0) cnt->ringbuf_bytes += len;
  return err;
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
  __u32 slot = bpf_get_smp_processor_id();
  __u64 len = build_record(ctx, cnt, slot, tgid, tid, 0, 0, NULL);
  struct scratch_buf* buf = bpf_map_lookup_elem(&scratch, &slot);
  if (!buf || len == 0 || len > SCRATCH_SIZE) return 0;
  if (output_record(buf->data, len, cnt) != 0) cnt->lost_ringbuf++;
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

// exec replaces every mapping of the process (and, for Python, its interpreter). --call-graph
// bpf: the loaded ones would unwind
// the new image with the old image's tables wherever the address ranges overlap; forgetting
// them sends the next sample as a stack copy, which has the recorder load the new ones. And
// user space is told, in order with the samples, so that the mappings it remembers stop
// answering for the new image's samples (stack copies and normalization).
SEC("raw_tp/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct* task) {
  __u32 tgid = BPF_CORE_READ(task, tgid);
  __u32 tid = BPF_CORE_READ(task, pid);
  if (bpf_unwind) bpf_map_delete_elem(&proc_mappings, &tgid);
  // The new image has its own interpreter, or none: user space registers it again.
  if (python) bpf_map_delete_elem(&python_procs, &tgid);
  if (!is_target(tgid, tid)) return 0;
  struct stacksym_sample s = {};
  s.time_ns = bpf_ktime_get_ns();
  s.pid = tgid;
  s.tid = tid;
  s.cpu = bpf_get_smp_processor_id();
  s.flags = STACKSYM_SAMPLE_EXEC;
  bpf_get_current_comm(s.comm, sizeof(s.comm));
  // With Python frames, the reader is woken: it registers a new interpreter before the
  // program's first Python samples rather than a poll interval later.
  bpf_ringbuf_output(&samples, &s, sizeof(s), python ? BPF_RB_FORCE_WAKEUP : 0);
  return 0;
}

// --off-cpu. Task states (include/linux/sched.h).
#define TASK_INTERRUPTIBLE 0x1
#define TASK_UNINTERRUPTIBLE 0x2
#define TASK_DEAD 0x80
#define TASK_WAKING 0x200

// Before Linux 5.14 the state was task_struct::state.
struct task_struct___old {
  long state;
} __attribute__((preserve_access_index));

// The state prev leaves the CPU in: from sched_switch's argument where it has one (a racing
// wakeup may already have changed prev->__state).
static __always_inline __u64 prev_task_state(struct task_struct* prev, __u64 prev_state) {
  if (switch_has_prev_state) return prev_state;
  if (bpf_core_field_exists(prev->__state)) return BPF_CORE_READ(prev, __state);
  return BPF_CORE_READ((struct task_struct___old*)prev, state);
}

// As a ThreadState. Preempted, or still runnable (yield): preempted. A task being woken
// (TASK_WAKING, seen only through a racy read of __state) was sleeping.
static __always_inline __u32 off_cpu_state(bool preempt, __u64 state) {
  if (preempt || (state & 0xffff) == 0) return STACKSYM_STATE_PREEMPTED;
  if (state & (TASK_INTERRUPTIBLE | TASK_WAKING)) return STACKSYM_STATE_SLEEPING;
  if (state & TASK_UNINTERRUPTIBLE) return STACKSYM_STATE_UNINTERRUPTIBLE;
  return STACKSYM_STATE_OTHER;
}

// The task's entry, created on its first switch-out (from the scratch buffer's bytes: every
// field is written before it is read).
static __always_inline struct stacksym_off_cpu_task* task_entry(__u32 tid,
                                                                struct scratch_buf* buf) {
  struct stacksym_off_cpu_task* t = bpf_map_lookup_elem(&off_cpu_tasks, &tid);
  if (t) return t;
  bpf_map_update_elem(&off_cpu_tasks, &tid, buf->data, BPF_NOEXIST);
  t = bpf_map_lookup_elem(&off_cpu_tasks, &tid);
  if (t) t->memo.valid = 0;  // no walk kept yet (the bytes came from the scratch buffer)
  return t;
}

// The current task's stacks, taken as it leaves the CPU: kept in its entry (stacks of IPs) or
// sent at once (stack copies); the kind of the entry says which.
static __always_inline void keep_stacks(void* ctx, struct stacksym_off_cpu_task* t, __u32 slot,
                                        struct scratch_buf* buf, struct stacksym_counters* cnt,
                                        __u32 tgid, __u32 tid, __u32 state) {
  __u64 len = build_record(ctx, cnt, slot, tgid, tid,
                           STACKSYM_SAMPLE_OFF_CPU | state << STACKSYM_SAMPLE_STATE_SHIFT,
                           off_cpu_kernel_skip, &t->memo);
  struct stacksym_sample* s = (struct stacksym_sample*)buf->data;
  // Stacks of IPs wait in the entry. Those unwound here (or none) may be added up in the
  // kernel; frame-pointer chains not: exec may replace the image before a sum of them is read,
  // while a process whose stacks are unwound here has its tables deleted at exec, so that its
  // next ones are stack copies, in order with the exec in the ring buffer.
  if (len <= STACKSYM_OFF_CPU_RECORD_ROOM && !(s->flags & STACKSYM_SAMPLE_STACK_COPY)) {
    s->time_ns = 0;  // fingerprinted and compared without them
    s->cpu = 0;
    bpf_probe_read_kernel(t->record, len, s);
    t->len = len;
    t->summable = (s->flags & STACKSYM_SAMPLE_BPF_UNWOUND) || s->ustack_bytes == 0;
    t->kind = STACKSYM_OFF_CPU_STORED;
    return;
  }
  s->flags = (s->flags & ~STACKSYM_SAMPLE_OFF_CPU) | STACKSYM_SAMPLE_OFF_CPU_OPEN;
  t->opened_ns = s->time_ns;
  if (len == 0 || len > SCRATCH_SIZE || output_record(s, len, cnt) != 0) {
    t->kind = STACKSYM_OFF_CPU_OPEN_LOST;
  } else {
    t->kind = STACKSYM_OFF_CPU_OPENED;
  }
}

// prev (still the current task) leaves the CPU: a target's stacks are taken now, while its
// user memory is readable, and kept in its entry until it runs again, or sent at once when they
// do not fit (stack copies).
static __always_inline void note_switch_out(void* ctx, bool preempt, __u64 prev_state) {
  __u64 pid_tgid = bpf_get_current_pid_tgid();
  __u32 tgid = pid_tgid >> 32;
  __u32 tid = (__u32)pid_tgid;
  if (tid == 0 || tgid == self_tgid || !is_target(tgid, tid)) return;
  if (prev_state & TASK_DEAD) {
    bpf_map_delete_elem(&off_cpu_tasks, &tid);  // its last switch
    return;
  }
  struct stacksym_counters* cnt = get_counters();
  __u32 slot = off_cpu_slot_base + bpf_get_smp_processor_id();
  struct scratch_buf* buf = bpf_map_lookup_elem(&scratch, &slot);
  if (!cnt || !buf) return;
  struct stacksym_off_cpu_task* t = task_entry(tid, buf);
  if (!t) {
    cnt->off_cpu_untracked++;
    return;
  }
  // Off CPU from the moment the switch begins, whether the stacks are taken or not: taking
  // them delays the switch while the task's waker goes on, so that, measured from after them,
  // a kept interval would be shorter than a sampled-out one by about that time (the estimate
  // of --off-cpu-sample 0.25 fell 18 % short on the pipe ping-pong).
  __u64 start = bpf_ktime_get_ns();
  __u32 state = off_cpu_state(preempt, prev_state);
  t->state = state;
  if (off_cpu_keep != 0 && bpf_get_prandom_u32() >= off_cpu_keep) {
    t->kind = STACKSYM_OFF_CPU_SAMPLED_OUT;
  } else {
    keep_stacks(ctx, t, slot, buf, cnt, tgid, tid, state);
  }
  t->start_ns = start;
}

#define RECORD_WORDS (STACKSYM_OFF_CPU_RECORD_ROOM / 8)

// A fingerprint of the entry's record (its time_ns and cpu are 0). Global: verified once.
__noinline __u64 record_fingerprint(const struct stacksym_off_cpu_task* t) {
  if (!t) return 0;
  const __u64* w = (const __u64*)t->record;
  __u32 n = t->len / 8;
  __u64 h = 0x9e3779b97f4a7c15ull ^ t->len;
  for (__u32 i = 0; i < RECORD_WORDS; ++i) {
    if (i >= n) break;
    h = (h ^ w[i]) * 0xff51afd7ed558ccdull;
    h ^= h >> 29;
  }
  return h;
}

// Whether the sum holds the same record as the entry, word for word. Global: verified once.
__noinline int same_record(const struct stacksym_off_cpu_task* t,
                           const struct stacksym_off_cpu_sum* v) {
  if (!t || !v || t->len != v->len) return 0;
  const __u64* a = (const __u64*)t->record;
  const __u64* b = (const __u64*)v->record;
  __u32 n = t->len / 8;
  for (__u32 i = 0; i < RECORD_WORDS; ++i) {
    if (i >= n) break;
    if (a[i] != b[i]) return 0;
  }
  return 1;
}

// Adds the interval to its record's sum in the active map; false when it has to be sent one by
// one (the map is full, or another record has the fingerprint).
static __always_inline bool add_to_sum(struct stacksym_off_cpu_task* t, __u64 off_ns,
                                       struct stacksym_counters* cnt) {
  __u32 zero = 0;
  struct stacksym_off_cpu_control* ctl = bpf_map_lookup_elem(&off_cpu_control, &zero);
  if (!ctl) return false;
  __u32 active = ctl->active & 1;
  void* sums = bpf_map_lookup_elem(&off_cpu_sums, &active);
  __u32 slot = off_cpu_slot_base + bpf_get_smp_processor_id();
  struct scratch_buf* buf = bpf_map_lookup_elem(&scratch, &slot);
  if (!sums || !buf) return false;
  struct stacksym_sample* h = (struct stacksym_sample*)t->record;
  struct stacksym_off_cpu_key key = {
      .fingerprint = record_fingerprint(t), .tgid = h->pid, .tid = h->tid};
  struct stacksym_off_cpu_sum* v = bpf_map_lookup_elem(sums, &key);
  if (!v) {
    // A new sum, built in the (now idle) scratch buffer of this CPU's switches.
    struct stacksym_off_cpu_sum* fresh = (struct stacksym_off_cpu_sum*)buf->data;
    fresh->ns = off_ns;
    fresh->count = 1;
    fresh->len = t->len;
    bpf_probe_read_kernel(fresh->record, sizeof(fresh->record), t->record);
    if (bpf_map_update_elem(sums, &key, fresh, BPF_NOEXIST) == 0) return true;
    v = bpf_map_lookup_elem(sums, &key);  // another CPU added it meanwhile, or the map is full
    if (!v) {
      cnt->off_cpu_unsummed++;
      return false;
    }
  }
  if (!same_record(t, v)) {
    cnt->off_cpu_unsummed++;
    return false;
  }
  __sync_fetch_and_add(&v->ns, off_ns);
  __sync_fetch_and_add(&v->count, 1);
  return true;
}

// The end of an interval whose stacks were sent at its start.
static __always_inline long send_close(struct task_struct* next, __u32 tid, __u64 start,
                                       __u64 off_ns, bool discard, struct stacksym_counters* cnt) {
  struct stacksym_sample c = {};
  c.time_ns = start;
  c.pid = BPF_CORE_READ(next, tgid);
  c.tid = tid;
  c.cpu = bpf_get_smp_processor_id();
  c.flags = STACKSYM_SAMPLE_OFF_CPU_CLOSE | (discard ? STACKSYM_SAMPLE_OFF_CPU_DISCARD : 0);
  c.off_cpu_ns = off_ns;
  return output_record(&c, sizeof(c), cnt);
}

// next comes back on CPU: if it is a target with an open interval, the interval is counted and,
// unless sampled out or too short, sent with its stacks.
static __always_inline void close_switch_in(struct task_struct* next) {
  __u32 tid = BPF_CORE_READ(next, pid);
  if (tid == 0) return;
  struct stacksym_off_cpu_task* t = bpf_map_lookup_elem(&off_cpu_tasks, &tid);
  struct stacksym_counters* cnt = get_counters();
  if (!t || !cnt || t->start_ns == 0) return;
  __u64 now = bpf_ktime_get_ns();
  __u64 start = t->start_ns;
  __u64 off_ns = now - start;
  t->start_ns = 0;
  cnt->off_cpu_intervals++;
  cnt->off_cpu_ns += off_ns;
  __u32 kind = t->kind;
  if (kind == STACKSYM_OFF_CPU_SAMPLED_OUT) {
    cnt->off_cpu_sampled_out++;
    cnt->off_cpu_sampled_out_ns += off_ns;
    return;
  }
  if (off_ns < off_cpu_min_ns) {
    cnt->off_cpu_filtered++;
    cnt->off_cpu_filtered_ns += off_ns;
    if (kind == STACKSYM_OFF_CPU_OPENED) send_close(next, tid, t->opened_ns, off_ns, true, cnt);
    return;
  }
  long err = -1;
  if (kind == STACKSYM_OFF_CPU_STORED && t->summable && add_to_sum(t, off_ns, cnt)) {
    cnt->off_cpu_summed++;
    cnt->off_cpu_summed_ns += off_ns;
    err = 0;
  } else if (kind == STACKSYM_OFF_CPU_STORED) {
    struct stacksym_sample* s = (struct stacksym_sample*)t->record;
    s->time_ns = now;
    s->off_cpu_ns = off_ns;
    __u64 len = t->len;
    if (len <= STACKSYM_OFF_CPU_RECORD_ROOM) err = output_record(t->record, len, cnt);
    s->time_ns = 0;  // the stored record stays fit for a fingerprint
    s->off_cpu_ns = 0;
  } else if (kind == STACKSYM_OFF_CPU_OPENED) {
    err = send_close(next, tid, t->opened_ns, off_ns, false, cnt);
  }
  if (err != 0) {
    cnt->off_cpu_lost++;
    cnt->off_cpu_lost_ns += off_ns;
  } else {
    cnt->off_cpu_sent++;
    cnt->off_cpu_sent_ns += off_ns;
  }
}

// One switch, however the program is attached: prev leaves the CPU, next comes back on it.
// prev_state is sched_switch's fourth argument, read by the caller only where the kernel passes
// it (Linux 5.18+; a tp_btf program may not name an argument the kernel's prototype lacks).
static __always_inline void on_switch(void* ctx, bool preempt, struct task_struct* prev,
                                      struct task_struct* next, __u64 prev_state) {
  note_switch_out(ctx, preempt, prev_task_state(prev, prev_state));
  close_switch_in(next);
}

// Two ways to the same tracepoint; user space loads one. tp_btf, where the kernel's BTF
// describes the tracepoint (btf_trace_sched_switch): the verifier knows the arguments' types.
// The raw tracepoint needs no BTF for its attach point, and libbpf then does not parse the
// kernel's whole BTF (5 MB) to find one: the fallback, and what a test can force.
SEC("tp_btf/sched_switch")
int BPF_PROG(on_switch_btf, bool preempt, struct task_struct* prev, struct task_struct* next) {
  on_switch(ctx, preempt, prev, next, switch_has_prev_state ? ctx[3] : 0);
  return 0;
}

SEC("raw_tp/sched_switch")
int BPF_PROG(on_switch_raw, bool preempt, struct task_struct* prev, struct task_struct* next) {
  on_switch(ctx, preempt, prev, next, switch_has_prev_state ? ctx[3] : 0);
  return 0;
}
