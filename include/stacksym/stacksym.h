/* stacksym/stacksym.h — the C API of libstacksym: symbolize and normalize addresses.
 *
 * Link with `pkg-config --cflags --libs stacksym` (or find_package(stacksym) in CMake:
 * target stacksym::stacksym). Plain C11; every call is extern "C".
 *
 *   stacksym_elf* elf;
 *   if (stacksym_elf_open("/usr/bin/bash", NULL, &elf) != STACKSYM_OK) {
 *     fprintf(stderr, "%s\n", stacksym_last_error());
 *     return 1;
 *   }
 *   uint64_t addrs[] = {0x4a2f0};
 *   stacksym_symbolized_list* list;
 *   if (stacksym_elf_symbolize(elf, addrs, 1, STACKSYM_VIRTUAL_ADDRESS, &list) == STACKSYM_OK) {
 *     const stacksym_symbolized* a = &list->items[0];
 *     if (a->reason != STACKSYM_REASON_NONE) puts(stacksym_reason_text(a->reason));
 *     else for (size_t i = 0; i < a->frame_count; i++) puts(a->frames[i].function);
 *     stacksym_symbolized_list_free(list);
 *   }
 *   stacksym_elf_close(elf);
 *
 * Errors: a call that can fail returns a stacksym_status; on anything but STACKSYM_OK the
 * out-parameters are left NULL and stacksym_last_error() describes the failure. Per-address
 * misses are not errors: each answer carries a reason (STACKSYM_REASON_NONE when answered).
 *
 * Ownership: handles (stacksym_elf, stacksym_process, stacksym_build_ids, stacksym_normalizer)
 * are created by *_open or *_new and released by the matching *_close or *_free. Result lists are
 * owned by the caller and released by their *_free function; every pointer inside a list
 * (strings, frames, build IDs) lives exactly as long as the list, independent of the handle
 * that produced it. Strings are NUL-terminated UTF-8 (as bytes found in the files); NULL
 * marks "unknown" where stated. Passing NULL to a *_free or *_close function does nothing.
 *
 * Thread-safety: a handle is used by one thread at a time (different handles may be used
 * from different threads at once). Result lists are immutable and may be read from any
 * thread. stacksym_last_error() is per thread. The functions without a handle
 * (stacksym_version, stacksym_reason_*, stacksym_status_name, stacksym_options_init) are
 * thread-safe.
 *
 * Profiles are not part of the C API. A pprof file `stacksym record` wrote may hold Python
 * frames (C++: FrameKind::kPython): locations in the mapping named "[python]", whose Function
 * holds the Python function's qualified name, co_name (system name), file and first line and
 * whose Line holds the line. They are named already: their addresses are identities, not
 * offsets to symbolize (docs/capture.md, "Python frames").
 */
#ifndef STACKSYM_STACKSYM_H
#define STACKSYM_STACKSYM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define STACKSYM_API __attribute__((visibility("default")))
#else
#define STACKSYM_API
#endif

/* Version of the library, "MAJOR.MINOR.PATCH". */
STACKSYM_API const char* stacksym_version(void);

/* ------------------------------------------------------------------------------------------
 * Errors */

typedef enum stacksym_status {
  STACKSYM_OK = 0,
  STACKSYM_ERROR_IO = 1,               /* open/read/mmap failed */
  STACKSYM_ERROR_NOT_FOUND = 2,        /* a file or process that was asked for does not exist */
  STACKSYM_ERROR_PERMISSION = 3,       /* EACCES / EPERM */
  STACKSYM_ERROR_MALFORMED = 4,        /* the bytes contradict their own format */
  STACKSYM_ERROR_UNSUPPORTED = 5,      /* well-formed but not handled (big-endian ELF, ...) */
  STACKSYM_ERROR_INVALID_ARGUMENT = 6, /* NULL where a value is needed, pid <= 0, ... */
  STACKSYM_ERROR_INTERNAL = 7,         /* a bug, or out of memory */
  /* Not a value: makes any int a value of the type, so that stacksym_status_name of an
   * unknown one is "unknown" instead of undefined behaviour in C++. */
  STACKSYM_STATUS_MAX_ENUM_ = 0x7fffffff
} stacksym_status;

/* "ok", "io", "not_found", ... (never NULL). */
STACKSYM_API const char* stacksym_status_name(stacksym_status status);

/* The message of the last failed call on this thread ("" when none). Valid until the next
 * call of this library on the same thread. */
STACKSYM_API const char* stacksym_last_error(void);

/* ------------------------------------------------------------------------------------------
 * Per-address reasons: why an address has no answer */

typedef enum stacksym_reason {
  STACKSYM_REASON_NONE = 0,              /* answered */
  STACKSYM_REASON_NOT_IN_SEGMENT = 1,    /* in no PT_LOAD segment of the file */
  STACKSYM_REASON_NO_SYMBOL = 2,         /* no symbol covers the address */
  STACKSYM_REASON_NO_SYMBOLS = 3,        /* the file has no symbol table at all */
  STACKSYM_REASON_UNMAPPED = 4,          /* no mapping of the process covers the address */
  STACKSYM_REASON_NO_BUILD_ID = 5,       /* the mapped file has no build ID */
  STACKSYM_REASON_ANONYMOUS = 6,         /* anonymous memory (heap, stack, JIT without map) */
  STACKSYM_REASON_VDSO = 7,              /* the vDSO */
  STACKSYM_REASON_PROCESS_GONE = 8,      /* the process exited */
  STACKSYM_REASON_ACCESS_DENIED = 9,     /* EACCES/EPERM on the process's maps or files */
  STACKSYM_REASON_FILE_UNAVAILABLE = 10, /* the file could not be opened or is not ELF */
  STACKSYM_REASON_INVALID_ADDRESS = 11,  /* the address itself is meaningless */
  STACKSYM_REASON_CORRUPT_DATA = 12,     /* the data needed for the address is malformed */
  STACKSYM_REASON_NOT_FOUND = 13,        /* no file with the requested build ID was found */
  STACKSYM_REASON_KERNEL_ADDRESSES_HIDDEN = 14,
  STACKSYM_REASON_MAX_ENUM_ = 0x7fffffff /* not a value (as for stacksym_status) */
} stacksym_reason;

/* "none", "no_symbol", ... and a sentence; never NULL ("unknown" for other values). */
STACKSYM_API const char* stacksym_reason_name(stacksym_reason reason);
STACKSYM_API const char* stacksym_reason_text(stacksym_reason reason);

/* ------------------------------------------------------------------------------------------
 * Options */

typedef struct stacksym_options {
  int demangle;   /* C++/Rust names demangled (default 1) */
  int debug_info; /* use DWARF: file:line and inline chains (default 1) */
  int inlines;    /* report inlined frames, else only the out-of-line one (default 1) */
  /* Roots of separate debug files (with .build-id trees); NULL/0: /usr/lib/debug. The
   * strings are copied by the call that takes the options. */
  const char* const* debug_dirs;
  size_t debug_dir_count;
  unsigned threads; /* threads a batch may use to parse debug info (0: one per CPU) */
} stacksym_options;

/* Fills in the defaults. Functions that take options accept NULL for the defaults. */
STACKSYM_API void stacksym_options_init(stacksym_options* options);

/* ------------------------------------------------------------------------------------------
 * Symbolized answers */

typedef struct stacksym_frame {
  const char* function;     /* demangled if asked; "" when unknown */
  const char* raw_function; /* linkage name */
  const char* file;         /* NULL when unknown */
  uint32_t line;            /* 0 when unknown */
  uint32_t column;          /* 0 when unknown */
  int inlined;              /* 1 for every frame but the last (the out-of-line function) */
} stacksym_frame;

typedef struct stacksym_symbolized {
  uint64_t input;         /* the address (or offset) as given */
  uint64_t vaddr;         /* in the ELF file's virtual address space */
  stacksym_reason reason; /* STACKSYM_REASON_NONE when answered */
  /* From the symbol table; "" when only DWARF knew the function. */
  const char* symbol; /* demangled if asked */
  const char* raw_symbol;
  uint64_t symbol_address;
  uint64_t symbol_size;
  uint64_t offset; /* vaddr - symbol_address */
  /* Inline chain, innermost first; the last is the out-of-line function. Empty (0) without
   * DWARF. */
  const stacksym_frame* frames;
  size_t frame_count;
  const char* module; /* path of the file that answered ("" when none) */
} stacksym_symbolized;

typedef struct stacksym_symbolized_list {
  const stacksym_symbolized* items; /* one per input, in input order */
  size_t count;
} stacksym_symbolized_list;

STACKSYM_API void stacksym_symbolized_list_free(stacksym_symbolized_list* list);

/* More about a frame of `list` (`frame` points into it; stacksym_frame keeps its layout):
 * where its function starts, as llvm-symbolizer's StartFileName and StartLine (DWARF's
 * DW_AT_decl_file and DW_AT_decl_line; NULL and 0 when unknown), and its DWARF
 * discriminator (the line row's for the innermost frame, the inlined call site's for the
 * others; 0 when none). NULL / 0 for a frame that is not in `list`. They live as long as
 * `list`. */
STACKSYM_API const char* stacksym_frame_start_file(const stacksym_symbolized_list* list,
                                                   const stacksym_frame* frame);
STACKSYM_API uint32_t stacksym_frame_start_line(const stacksym_symbolized_list* list,
                                                const stacksym_frame* frame);
STACKSYM_API uint32_t stacksym_frame_discriminator(const stacksym_symbolized_list* list,
                                                   const stacksym_frame* frame);

/* How frames name their functions (stacksym_frame::function and raw_function):
 * LINKAGE (the default): the linkage name, from the symbol table for the out-of-line
 * function, demangled when asked ("ns::f(int)"); SHORT: DWARF's DW_AT_name, searched
 * through abstract origins and specifications ("f", "g<int>": no scope, no parameters), as
 * llvm-symbolizer --functions=short prints it; frames without DWARF then have "" (the
 * symbol fields keep the symbol table's name). Set on a handle by the *_set_function_names
 * calls below, before or between symbolize calls (the handle's caches are dropped). */
typedef enum stacksym_function_names {
  STACKSYM_FUNCTION_NAMES_LINKAGE = 0,
  STACKSYM_FUNCTION_NAMES_SHORT = 1,
  /* Not a value: makes any int a value of the type, so that an unknown one passed in is
   * rejected (STACKSYM_ERROR_INVALID_ARGUMENT) instead of being undefined behaviour in C++. */
  STACKSYM_FUNCTION_NAMES_MAX_ENUM_ = 0x7fffffff
} stacksym_function_names;

/* ------------------------------------------------------------------------------------------
 * One ELF file */

typedef struct stacksym_elf stacksym_elf;

typedef enum stacksym_address_kind {
  STACKSYM_VIRTUAL_ADDRESS = 0,                /* addresses in the file's virtual address space */
  STACKSYM_FILE_OFFSET = 1,                    /* offsets into the file */
  STACKSYM_ADDRESS_KIND_MAX_ENUM_ = 0x7fffffff /* not a value (as above) */
} stacksym_address_kind;

/* Opens an ELF file (its debug files are found on first need). */
STACKSYM_API stacksym_status stacksym_elf_open(const char* path, const stacksym_options* options,
                                               stacksym_elf** out);
STACKSYM_API void stacksym_elf_close(stacksym_elf* elf);
/* The file's GNU build ID as lowercase hex ("" when none); lives as long as `elf`. */
STACKSYM_API const char* stacksym_elf_build_id(const stacksym_elf* elf);
STACKSYM_API stacksym_status stacksym_elf_symbolize(stacksym_elf* elf, const uint64_t* addresses,
                                                    size_t count, stacksym_address_kind kind,
                                                    stacksym_symbolized_list** out);
/* STACKSYM_ERROR_INVALID_ARGUMENT for an unknown value; on any failure the handle keeps its
 * previous setting. */
STACKSYM_API stacksym_status stacksym_elf_set_function_names(stacksym_elf* elf,
                                                             stacksym_function_names names);

/* ------------------------------------------------------------------------------------------
 * A live process: addresses as the process sees them (the binaries are opened through
 * /proc/PID/map_files, so containers and deleted files work; the vDSO and perf maps too). */

typedef struct stacksym_process stacksym_process;

STACKSYM_API stacksym_status stacksym_process_new(const stacksym_options* options,
                                                  stacksym_process** out);
STACKSYM_API void stacksym_process_free(stacksym_process* process);
/* STACKSYM_ERROR_INVALID_ARGUMENT for pid <= 0; a process that is gone gives per-address
 * reasons. */
STACKSYM_API stacksym_status stacksym_process_symbolize(stacksym_process* process, pid_t pid,
                                                        const uint64_t* addresses, size_t count,
                                                        stacksym_symbolized_list** out);
STACKSYM_API stacksym_status stacksym_process_set_function_names(stacksym_process* process,
                                                                 stacksym_function_names names);

/* ------------------------------------------------------------------------------------------
 * (build ID, file offset) pairs, as stored by a profiler: the binary is found by build ID
 * under the debug dirs (<dir>/.build-id/xx/rest, checked to carry that build ID) and its
 * DWARF through the same dirs. A build ID found nowhere gives STACKSYM_REASON_NOT_FOUND. */

typedef struct stacksym_build_ids stacksym_build_ids;

typedef struct stacksym_build_id_offset {
  const uint8_t* build_id;
  size_t build_id_size;
  uint64_t file_offset;
} stacksym_build_id_offset;

STACKSYM_API stacksym_status stacksym_build_ids_new(const stacksym_options* options,
                                                    stacksym_build_ids** out);
STACKSYM_API void stacksym_build_ids_free(stacksym_build_ids* symbolizer);
STACKSYM_API stacksym_status stacksym_build_ids_symbolize(stacksym_build_ids* symbolizer,
                                                          const stacksym_build_id_offset* pairs,
                                                          size_t count,
                                                          stacksym_symbolized_list** out);
STACKSYM_API stacksym_status stacksym_build_ids_set_function_names(stacksym_build_ids* symbolizer,
                                                                   stacksym_function_names names);

/* ------------------------------------------------------------------------------------------
 * Normalization: addresses of a live process -> (module, build ID, file offset), answers
 * that stay valid after the process exits. */

typedef struct stacksym_normalizer stacksym_normalizer;

typedef enum stacksym_module_kind {
  STACKSYM_MODULE_ELF = 0,       /* a file-backed mapping */
  STACKSYM_MODULE_VDSO = 1,      /* file_offset is the offset in the vDSO image */
  STACKSYM_MODULE_ANONYMOUS = 2, /* heap, stack, JIT code: offset from the mapping's start */
  STACKSYM_MODULE_UNKNOWN = 3,   /* other special mappings */
  STACKSYM_MODULE_KERNEL = 4,    /* the kernel (not a user mapping: normalization never gives it) */
  STACKSYM_MODULE_KIND_MAX_ENUM_ = 0x7fffffff /* not a value (as for stacksym_status) */
} stacksym_module_kind;

typedef struct stacksym_module {
  stacksym_module_kind kind;
  const char* path;        /* as the process sees it, or "[vdso]", "[heap]", ...; "" when none */
  int deleted;             /* the file was unlinked */
  const uint8_t* build_id; /* NULL when none (see build_id_reason) */
  size_t build_id_size;
  stacksym_reason build_id_reason;         /* why there is no build ID (NONE when there is one) */
  uint64_t map_start, map_end, map_offset; /* lowest mapping of the module in the batch */
} stacksym_module;

#define STACKSYM_NO_MODULE UINT32_C(0xffffffff)

typedef struct stacksym_normalized_address {
  uint64_t file_offset;   /* meaningful when module != STACKSYM_NO_MODULE */
  uint32_t module;        /* index into stacksym_normalized::modules, or STACKSYM_NO_MODULE */
  stacksym_reason reason; /* set when module == STACKSYM_NO_MODULE */
} stacksym_normalized_address;

typedef struct stacksym_normalized {
  pid_t pid;
  const stacksym_normalized_address* addresses; /* one per input, in input order */
  size_t address_count;
  const stacksym_module* modules; /* in order of first appearance by address */
  size_t module_count;
} stacksym_normalized;

/* build_ids: read each module's build ID (1) or not (0). */
STACKSYM_API stacksym_status stacksym_normalizer_new(int build_ids, stacksym_normalizer** out);
STACKSYM_API void stacksym_normalizer_free(stacksym_normalizer* normalizer);
STACKSYM_API stacksym_status stacksym_normalize(stacksym_normalizer* normalizer, pid_t pid,
                                                const uint64_t* addresses, size_t count,
                                                stacksym_normalized** out);
STACKSYM_API void stacksym_normalized_free(stacksym_normalized* normalized);

#ifdef __cplusplus
}
#endif

#endif /* STACKSYM_STACKSYM_H */
