// DemangleItaniumSubset — libiberty's exact text for the common part of the Itanium C++ ABI
// grammar, faster on long template names; nullopt for anything outside it (the caller then
// asks libiberty, see base/demangle.cc). Where libiberty gives up on a name the subset takes
// (its recursion limits, which real names reach only nested deeper than the subset goes, or
// odd inputs no compiler writes), the subset still answers.
//
//   if (std::optional<std::string> text = DemangleItaniumSubset("_ZN3foo3barIiEEvT_")) ...
//   // "void foo::bar<int>(int)"
//
// Why: an index build demangles every function name of a binary, and on big C++ libraries
// libiberty was the one piece of its CPU as big as its gap to the goal. libiberty spends four
// fifths of its time printing, printing out again each substitution of a long template name
// every time it recurs; this prints each node once and copies its text for every reference.
//
// Taken: nested names (with const, volatile and restrict member functions), unscoped and std::
// names, internal-linkage names, source names with the anonymous namespace, ABI tags, template
// arguments (types, integer, bool, enum and other integer-typed literals, null pointers),
// template argument packs and their expansions (with libiberty's quirks around empty packs),
// substitutions (S_, S<n>_, Sa, Sb, Ss, Si, So, Sd, St), template parameters in a function
// template's signature (also as a scope: T_::value_type), builtin types, const/volatile/restrict,
// pointers and references (collapsed as C++ does), function types (also under pointers and
// references), arrays, pointers to members, constructors, destructors, operators (with template
// arguments too), conversion operators, and clone suffixes (" [clone .isra.0]"). Everything else
// (special names, local names, lambdas, expressions, ref-qualifiers, floating-point literals, ...)
// is left to libiberty, as are names nested more than 64 templates deep and the forms libiberty
// prints in ways of its own (a pack outside an expansion, a function returning a function pointer).
// tests/base/itanium_subset_test.cc checks the text against libiberty on every name of the
// test fixtures and, when installed, of libceph-common's debug file; fuzz/fuzz_demangle on
// random input (wherever libiberty answers).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace stacksym {

std::optional<std::string> DemangleItaniumSubset(std::string_view mangled);

}  // namespace stacksym
