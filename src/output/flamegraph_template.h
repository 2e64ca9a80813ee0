// The flame graph page template (flamegraph_template.html), embedded at build time.
#pragma once

#include <string_view>

namespace stacksym::output {

// Placeholders the writer replaces: the page title (HTML-escaped) and the JSON tree.
inline constexpr std::string_view kTitlePlaceholder = "{{STACKSYM_TITLE}}";
inline constexpr std::string_view kDataPlaceholder = "/*STACKSYM_DATA*/null";

extern const std::string_view kFlameGraphTemplate;

}  // namespace stacksym::output
