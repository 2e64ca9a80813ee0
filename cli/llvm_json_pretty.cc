#include "llvm_json_pretty.h"

namespace stacksym::cli {

void AppendPrettyJson(std::string_view compact, int indent, std::string* out) {
  auto newline = [&] {
    *out += '\n';
    out->append(static_cast<size_t>(indent), ' ');
  };
  for (size_t i = 0; i < compact.size(); ++i) {
    char c = compact[i];
    switch (c) {
      case '"': {  // a string, copied through its escapes
        size_t end = i + 1;
        while (end < compact.size() && compact[end] != '"') end += compact[end] == '\\' ? 2 : 1;
        end = end < compact.size() ? end : compact.size() - 1;
        out->append(compact.substr(i, end - i + 1));
        i = end;
        break;
      }
      case '{':
      case '[':
        *out += c;
        if (i + 1 < compact.size() && compact[i + 1] == (c == '{' ? '}' : ']')) {
          *out += compact[++i];  // empty: "{}", "[]"
        } else {
          indent += 2;
          newline();
        }
        break;
      case '}':
      case ']':
        indent -= 2;
        newline();
        *out += c;
        break;
      case ',':
        *out += ',';
        newline();
        break;
      case ':':
        *out += ": ";
        break;
      default:
        *out += c;
    }
  }
}

}  // namespace stacksym::cli
