// llvm-symbolizer's JSON answers under --pretty-print: the compact JSON the drop-in writes,
// re-laid as llvm::json writes a value with an indent of 2 (formatv("{0:2}")):
//
//   AppendPrettyJson(R"({"a":[1,2],"b":{}})", 0, &out);
//   // {
//   //   "a": [
//   //     1,
//   //     2
//   //   ],
//   //   "b": {}
//   // }
//
// Each member and element on a line of its own, indented by its depth (plus `indent`, for an
// object inside the array of command-line answers), ": " after keys, empty containers as
// "{}" and "[]". The input must be compact (no whitespace outside strings), as the drop-in's.
#pragma once

#include <string>
#include <string_view>

namespace stacksym::cli {

void AppendPrettyJson(std::string_view compact, int indent, std::string* out);

}  // namespace stacksym::cli
