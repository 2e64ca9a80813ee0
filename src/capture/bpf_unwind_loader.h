// BpfUnwindLoader — --call-graph bpf: puts the executable mappings of a process and the unwind
// tables of their files into the BPF program's maps, within a bounded rows array.
//
//   loader.Init(rows_fd, max_rows, mappings_fd, max_processes, tables);
//   loader.Want(pid);   // a sample of pid came as a stack copy: load it (rate-limited)
//   loader.Want(pid, true);   // a walk of pid met an unknown mapping: reload it (sooner)
//   loader.Touch(pid);  // a sample of pid was unwound in the program (recency for eviction)
//   loader.Sweep();     // now and then: forget processes that are gone
//
// Tables are shared between processes by build ID (or by file identity). When a table does not
// fit, tables no loaded process uses are evicted first, least recently used first, then whole
// processes least recently sampled first (their next sample comes as a stack copy and loads
// them again). Rows are only rewritten after an RCU grace period since the last deletion of a
// process's mappings, so a walk that started before the deletion never reads the new rows.
// The rows live in segments of STACKSYM_ROWS_PER_SEGMENT rows, the inner maps of the program's
// unwind_rows map, each created when the first table placed in it is written.
// Not thread-safe: the recorder's thread calls it.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "capture/bpf_row_space.h"
#include "capture/sample_source.h"
#include "normalize/vma_sources.h"
#include "stacksym/elf.h"
#include "stacksym/unwind.h"

namespace stacksym::capture {

class BpfUnwindLoader {
 public:
  BpfUnwindLoader();
  ~BpfUnwindLoader();
  // A segment of `rows` rows (all zero), mappable: rows are written by memcpy, not one
  // syscall element at a time (130k rows took 20 ms through bpf_map_update_batch).
  static int CreateSegment(uint32_t rows);
  // rows_fd: the ARRAY_OF_MAPS whose slots are the segments, enough for max_rows; the loader
  // owns first_segment (from CreateSegment) and puts it in slot 0.
  void Init(int rows_fd, uint32_t max_rows, int first_segment, int mappings_fd,
            uint32_t max_processes, std::shared_ptr<UnwindTableCache> tables);

  // Called for a sample of pid that was not unwound in the program (tables not loaded), or
  // whose walk met an unknown mapping (`mapping_changed`: code mapped since the tables were
  // loaded, or a garbage return address). At most every 0.2 s per process; every 5 ms for an
  // unknown mapping, since until the reload every such walk sends a stack copy (with
  // --off-cpu, every switch of a command whose first load came while ld.so was still mapping
  // its libraries: 0.2 s of them were 12 000 copies of 16 KiB, 20 ms still 1 000 to 2 000).
  // A reload costs less than the copies that ask for it.
  void Want(uint32_t pid, bool mapping_changed = false);
  void Touch(uint32_t pid);
  // pid exec'd (the program already deleted its mappings): its old tables are free to evict
  // and its next sample loads the new image at once.
  void Forget(uint32_t pid);
  bool Loaded(uint32_t pid) const { return loaded_.count(pid) != 0; }
  // Forgets processes that are gone (pids get reused); at most once a second.
  void Sweep();
  void AddCounters(SourceCounters* c) const;

 private:
  struct LoadedTable {
    uint32_t row_start = 0;
    uint32_t row_count = 0;  // 0: the file has no table (frame pointers)
    uint64_t base_pc = 0;
    uint32_t table_end = 0;
    uint32_t users = 0;     // loaded processes whose mappings point at these rows
    uint64_t last_use = 0;  // clock_ when a process was last loaded with it
  };
  struct LoadedProcess {
    std::vector<std::string> tables;  // keys into tables_, one per mapping with a table
    uint64_t last_use = 0;            // clock_ at its last sample unwound in the program
  };

  void Load(uint32_t pid);
  LoadedTable* Table(const ElfFile& elf, const std::string& identity, uint32_t pid,
                     std::string* key, std::string* why);
  bool MakeRoom(uint32_t rows, uint32_t pid, std::string* why, uint32_t* at);
  bool EvictTable();
  bool EvictProcess(uint32_t except_pid);
  void Unload(uint32_t pid);
  void Release(const std::vector<std::string>& keys);
  void WaitForWalks();
  bool WriteRows(uint32_t at, std::span<const UnwindRow> rows, std::string* why);
  bool AddSegment(uint32_t slot, int fd, std::string* why);
  UnwindRow* Segment(uint32_t index, std::string* why);
  void Fail(uint32_t pid, const std::string& why);

  int rows_fd_ = -1;
  struct RowsSegment {
    int fd = -1;                // -1: not created yet
    UnwindRow* rows = nullptr;  // mapped
  };
  std::vector<RowsSegment> segments_;
  int mappings_fd_ = -1;
  uint32_t max_processes_ = 0;
  std::unique_ptr<BpfRowSpace> space_;
  std::shared_ptr<UnwindTableCache> table_cache_;
  std::unordered_map<std::string, LoadedTable> tables_;
  std::unordered_map<uint32_t, LoadedProcess> loaded_;
  std::shared_ptr<ElfFile> FileOf(uint32_t pid, const normalize::Vma& vma);
  std::shared_ptr<ElfFile> vdso_;
  std::unordered_map<uint32_t, double> attempts_;  // pid → last load attempt
  std::set<uint32_t> failed_;
  std::unordered_set<uint32_t> ever_loaded_;
  bool deleted_since_grace_ = false;  // a process's mappings were deleted since WaitForWalks
  uint64_t clock_ = 0;
  uint32_t mappings_generation_ = 0;  // stacksym_proc_mappings.generation of the last write
  double last_sweep_ = 0;
  uint64_t processes_loaded_ = 0;
  uint64_t processes_not_loaded_ = 0;
  uint64_t processes_evicted_ = 0;
  uint64_t tables_loaded_ = 0;
  uint64_t tables_evicted_ = 0;
  uint64_t rows_loaded_ = 0;
  std::string first_problem_;
};

}  // namespace stacksym::capture
