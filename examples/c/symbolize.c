/* symbolize — symbolize addresses of an ELF file with libstacksym's C API.
 *
 *   cc -o symbolize symbolize.c $(pkg-config --cflags --libs stacksym)
 *   ./symbolize /usr/bin/bash 0x4a2f0 0x30000
 *
 * Prints llvm-symbolizer's layout (the same as `stacksym symbolize elf --output-style=llvm`):
 * per address its inline chain, innermost first, as "function" and "file:line:column" lines,
 * then an empty line; "??" and "??:0:0" where nothing is known. */
#include <errno.h>
#include <inttypes.h>
#include <stacksym/stacksym.h>
#include <stdio.h>
#include <stdlib.h>

static int parse_address(const char* text, uint64_t* out) {
  char* end = NULL;
  errno = 0;
  unsigned long long value = strtoull(text, &end, 16); /* "0x" prefix optional */
  if (errno != 0 || end == text || *end != '\0') return 0;
  *out = (uint64_t)value;
  return 1;
}

static void print_answer(const stacksym_symbolized* a) {
  if (a->frame_count > 0) {
    for (size_t i = 0; i < a->frame_count; i++) {
      const stacksym_frame* f = &a->frames[i];
      printf("%s\n", f->function[0] ? f->function : "??");
      if (f->file)
        printf("%s:%" PRIu32 ":%" PRIu32 "\n", f->file, f->line, f->column);
      else
        printf("??:0:0\n");
    }
  } else if (a->reason == STACKSYM_REASON_NONE && a->symbol[0]) {
    printf("%s\n??:0:0\n", a->symbol);
  } else {
    printf("??\n??:0:0\n");
  }
  printf("\n");
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s ELF-FILE ADDRESS...\n", argv[0]);
    return 2;
  }
  size_t count = (size_t)(argc - 2);
  uint64_t* addresses = calloc(count, sizeof *addresses);
  if (!addresses) return 1;
  for (size_t i = 0; i < count; i++) {
    if (!parse_address(argv[i + 2], &addresses[i])) {
      fprintf(stderr, "%s: invalid address '%s'\n", argv[0], argv[i + 2]);
      free(addresses);
      return 1;
    }
  }

  stacksym_elf* elf = NULL;
  if (stacksym_elf_open(argv[1], NULL, &elf) != STACKSYM_OK) {
    fprintf(stderr, "%s: %s\n", argv[0], stacksym_last_error());
    free(addresses);
    return 1;
  }
  stacksym_symbolized_list* list = NULL;
  stacksym_status status =
      stacksym_elf_symbolize(elf, addresses, count, STACKSYM_VIRTUAL_ADDRESS, &list);
  if (status != STACKSYM_OK) {
    fprintf(stderr, "%s: %s: %s\n", argv[0], stacksym_status_name(status), stacksym_last_error());
  } else {
    for (size_t i = 0; i < list->count; i++) print_answer(&list->items[i]);
    stacksym_symbolized_list_free(list);
  }
  stacksym_elf_close(elf);
  free(addresses);
  return status == STACKSYM_OK ? 0 : 1;
}
