# Sourced by the bench scripts that compare symbolizers on sampled addresses.
# sample_addresses FILE N [SEED]: N addresses inside sized function symbols (.symtab, else
# .dynsym), uniformly over functions, uniformly inside each; deterministic for a seed (default
# 20261121). Uses $WORK for scratch.
sample_addresses() {
  local file=$1 n=$2 seed=${3:-20261121}
  { nm -S --defined-only "$file" 2>/dev/null || true; } >"$WORK/nm"
  if ! grep -qE ' [TtWwi] ' "$WORK/nm"; then nm -D -S --defined-only "$file" >"$WORK/nm" 2>/dev/null || true; fi
  python3 - "$WORK/nm" "$n" "$seed" <<'EOF'
import random, sys
funcs = []
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) >= 4 and p[2] in ("T", "t", "W", "w", "i"):
        size = int(p[1], 16)
        if size > 0:
            funcs.append((int(p[0], 16), size))
funcs = sorted(set(funcs))
rng = random.Random(int(sys.argv[3]))
for _ in range(int(sys.argv[2])):
    start, size = rng.choice(funcs)
    print(hex(start + rng.randrange(size)))
EOF
}
