# Sourced by the bench scripts that time a self-timing workload (it prints "elapsed_s SECONDS")
# under profilers. Needs $REPS, $TMP and, for slowdown, $BASE.
# best_time CMD...: runs CMD REPS times; prints the best workload time (the least disturbed by
# whatever else the machine does) and keeps that run's stderr in $TMP/best_stderr.
best_time() {
  local best="" t
  for ((i = 0; i < REPS; i++)); do
    t=$("$@" 2>"$TMP/stderr" | awk '/^elapsed_s/ {print $2}')
    [[ -n "$t" ]] || { echo "run failed: $*" >&2; cat "$TMP/stderr" >&2; return 1; }
    if [[ -z "$best" ]] || awk -v a="$t" -v b="$best" 'BEGIN{exit !(a<b)}'; then
      best=$t
      cp "$TMP/stderr" "$TMP/best_stderr"
    fi
  done
  echo "$best"
}

# best_stacksym_figures: "SAMPLES | LOST | CPU" from the summary of the best stacksym run.
best_stacksym_figures() {
  local summary samples lost cpu
  summary=$(cat "$TMP/best_stderr")
  samples=$(sed -n 's/^stacksym record: \([0-9]*\) samples.*/\1/p' <<<"$summary")
  lost=$(sed -n 's/.*), \([0-9]*\) lost,.*/\1/p' <<<"$summary")
  cpu=$(sed -n 's/.*(\([0-9.]*\) ms per 1000 samples).*/\1 ms/p' <<<"$summary")
  echo "$samples | $lost | $cpu"
}

# slowdown TIME: TIME against $BASE, as "+12.3%".
slowdown() { awk -v t="$1" -v b="$BASE" 'BEGIN{printf "%+.1f%%", (t-b)/b*100}'; }
