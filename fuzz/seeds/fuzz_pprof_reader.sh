#!/bin/sh
# Seeds for fuzz_pprof_reader: pprof files (gzip'ed and plain) made by the fuzz build's own
# stacksym binary from folded seeds. $1 is the build directory.
out="$1/fuzz/seeds-pprof"
mkdir -p "$out" || exit 0
printf 'app;main;work;inline_helper_[i];ns::hot_leaf(int) 80\nother;0x7f0000001234 5\nworker;main;libfoo.so+0x2000;entry_SYSCALL_64_[k];do_syscall_64_[k] 15\n' > "$out/sample.folded"
if [ -x "$1/stacksym" ] && "$1/stacksym" convert "$out/sample.folded" --to pprof -o "$out/sample.pb.gz" 2>/dev/null; then
  echo "$out/sample.pb.gz"
  gunzip -c "$out/sample.pb.gz" > "$out/sample.pb" 2>/dev/null && echo "$out/sample.pb"
fi
# A profile with off-CPU time (sample types samples, cpu and off_cpu; thread_state labels
# sleeping, uninterruptible, other), which no command writes from folded text: EncodePprof's
# bytes for three off-CPU stacks of two threads and one CPU stack.
base64 -d > "$out/off_cpu.pb" 2>/dev/null <<'SEED' && echo "$out/off_cpu.pb"
CgQIARACCgQIAxAECgQIBRAEEh4KAgIBEgYDwI23AQAaBAgNGAoaBAgOGAsaBAgPEBESIgoCAgES
BAAAiCcaBAgNGAoaBAgOGAsaBAgPEBEaBAgQEBISIQoBARIEAADYNhoECA0YChoECA4YDBoECA8Q
ExoECBAQFBIgCgEBEgMAAAEaBAgNGAoaBAgOGAwaBAgPEBMaBAgQEBUaHAgBEICAgICAIBi1pICA
gCAoBzAIOAFAAUgBUAEaGggCEJCAgIj4/////wEYkYCAiPj/////ASgJIhMIARABGLSkgICAICIG
CAEQCRgCIg8IAhACGJCAgIj4/////wEqCAgBEAoYCyAMMgAyB3NhbXBsZXMyBWNvdW50MgNjcHUy
C25hbm9zZWNvbmRzMgdvZmZfY3B1MhhzdGFja3N5bSBsb3N0IHNhbXBsZXM6IDAyCC9iaW4vYXBw
MgRiZWVmMhFba2VybmVsLmthbGxzeW1zXTIDZigpMgVfWjFmdjIEYS5jYzIDcGlkMgN0aWQyBGNv
bW0yDHRocmVhZF9zdGF0ZTIDYXBwMghzbGVlcGluZzICaW8yD3VuaW50ZXJydXB0aWJsZTIFb3Ro
ZXJaBAgDEARgwIQ9agEG
SEED
exit 0
