// The Prometheus text exposition format, as `serve` and `agent` write their /metrics: a HELP and
// TYPE header per metric, then `name{labels} value` lines.
#pragma once

#include <string>
#include <string_view>

namespace stacksym::remote {

void PrometheusHelp(std::string* out, std::string_view name, std::string_view type,
                    std::string_view help);
// `labels` is empty or a whole label set, braces included: {receiver="otlp"}.
void PrometheusLine(std::string* out, std::string_view name, std::string_view labels, double value);
// A label value escaped as the format wants (backslash, quote, newline).
std::string PrometheusLabelValue(std::string_view value);

}  // namespace stacksym::remote
