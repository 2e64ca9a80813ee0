#!/bin/sh
# Seeds for fuzz_demangle: one mangled name per file, each construct of the subset demangler
# and a few outside it. $1 is the build directory; seeds are written to $1/fuzz/seeds-demangle/.
out="$1/fuzz/seeds-demangle"
mkdir -p "$out" || exit 0
i=0
for name in _ZN3foo3barEv _Z3fooIiEvT_ _ZSt4swapIiEvRT_S1_ _ZN2ns6VectorIiEixEm \
  _ZNK3Foo3getERKSt6vectorIiSaIiEE _ZN3FooIiEC2Ev _ZN3FooIiED0Ev _ZN3FooaSERKS_ \
  _ZN12_GLOBAL__N_13BarclEv _ZN3BazIiLi5ELj7ELb1ELb0ELin3ELm9EE3getEv \
  _ZN5boost7forwardIRKcEEOT_RNS_11move_detail16remove_referenceIS3_E4typeE \
  _ZN3FooC1EDnPKcPPv _ZZ4mainENKUlvE_clEv _ZN3fooB5cxx113barEv _Z3fooPFviE _Z3fooIJiiEEvDpT_ \
  _ZN3FooILt31ELsn5ELc65EE3getEv _Z1fILN3Foo4KindE2EEvS0_ _ZNVK3Foo3getEPVKiPrKc _Znwm \
  _ZN3FooltIiEEbRKS_ _ZN3FoocvPKcEv _ZN3FooB5cxx11C2Ev _Z3fooSsSiSoSd _ZNSsC1Ev \
  _ZN1a1fEv.constprop.0.isra.0 _ZN1a1fEPFviEPS0_RKS1_ _ZN6MMDSOpC2IJiRKiS2_EEEDpOT_ \
  _ZN1bIJEiE1fEv _ZN1aIJEEEvDpOT_i _Z3fooA3_i _Z3fooM1aFviE; do
  i=$((i + 1))
  printf '%s' "$name" > "$out/$i" && echo "$out/$i"
done
exit 0
