#include "remote/prometheus_text.h"

#include <cstdio>

namespace stacksym::remote {

void PrometheusHelp(std::string* out, std::string_view name, std::string_view type,
                    std::string_view help) {
  out->append("# HELP ").append(name).append(" ").append(help).append("\n# TYPE ");
  out->append(name).append(" ").append(type).append("\n");
}

void PrometheusLine(std::string* out, std::string_view name, std::string_view labels,
                    double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, " %.9g\n", value);
  out->append(name).append(labels).append(buf);
}

std::string PrometheusLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace stacksym::remote
