/* A code object's fingerprint: 16 bits that tell it from another code object its address held
 * before or holds later. Frames are recorded as (code object address, instruction) at sample
 * time and the object is read from the process a fraction of a second later; by then the first
 * object may have been freed and its address reused. The BPF program takes the fingerprint
 * when it records a frame (capture/bpf/sample_event.h), the code-object reader when it reads
 * the object (code_object.h): a frame is named only when the two agree.
 *
 * Its fields are the first line and the address of the qualified name (a string object the
 * code object holds a reference to), mixed. C, for the BPF program too: the includer defines
 * __u64 and __s32 (linux/types.h, or vmlinux.h in BPF).
 *
 *   __u32 check = stacksym_py_code_check(co_firstlineno, (__u64)co_qualname);
 */
#ifndef STACKSYM_INTERP_PYTHON_CODE_CHECK_H_
#define STACKSYM_INTERP_PYTHON_CODE_CHECK_H_

static inline __u32 stacksym_py_code_check(__s32 first_line, __u64 qualname) {
  __u64 h = (qualname ^ ((__u64)(__u32)first_line << 47)) * 0x9e3779b97f4a7c15ULL;
  return (__u32)(h >> 48);
}

#endif
