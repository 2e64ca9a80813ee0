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
// Taken: nested names (const member functions), unscoped and std:: names, source names with the
// anonymous namespace, template arguments (types, integer and bool literals), substitutions
// (S_, S<n>_, Sa, Sb, St), template parameters in a function template's signature, builtin
// types, const, pointers and references (collapsed as C++ does), constructors, destructors,
// and operators without template arguments. Everything else (special names, local names,
// lambdas, ABI tags, function and array types, packs, expressions, clone suffixes, volatile,
// ref-qualifiers, Ss/Si/So/Sd, ...) is left to libiberty, as are names nested more than 18
// templates deep (libiberty gives up on some of them). tests/base/itanium_subset_test.cc
// checks the text against libiberty on every name of the test fixtures and, when installed,
// of libceph-common's debug file; fuzz/fuzz_demangle on random input (wherever libiberty
// answers).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace stacksym {

std::optional<std::string> DemangleItaniumSubset(std::string_view mangled);

}  // namespace stacksym
