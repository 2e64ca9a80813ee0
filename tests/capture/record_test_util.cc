#include "record_test_util.h"

#include <cstdio>

#include "stacksym/symbolize_profile.h"

namespace stacksym {

bool Refused(const Error& e) {
  return e.code == ErrorCode::kPermission || e.code == ErrorCode::kUnsupported ||
         e.message.find("not supported") != std::string::npos;
}

std::vector<NamedStack> Named(const Profile& p) {
  std::vector<NamedStack> out;
  for (size_t i = 0; i < p.stacks.size(); ++i) {
    NamedStack n{p.stacks[i].pid, p.stacks[i].tid, p.stacks[i].comm, p.counts[i], {}, {}, {}, {}};
    for (uint32_t f : p.stacks[i].frames) {
      const ProfileFrame& frame = p.frames[f];
      std::string name;
      if (f < p.symbols.size() && p.symbols[f] && !p.symbols[f]->lines.empty()) {
        name = p.symbols[f]->lines.back().function;  // the out-of-line function
      }
      if (frame.kind == FrameKind::kKernel) {
        n.kernel.push_back(name);
      } else {
        n.user.push_back(name);
        n.user_modules.push_back(frame.kind == FrameKind::kUser ? p.modules[frame.module].path
                                                                : "");
        std::string why;
        if (name.empty()) {
          char where[64];
          snprintf(where, sizeof where, "0x%llx", static_cast<unsigned long long>(frame.address));
          why = frame.kind == FrameKind::kUserRaw ? std::string("raw ") + where
                                                  : n.user_modules.back() + "+" + where;
          if (f < p.symbols.size() && p.symbols[f] && p.symbols[f]->reason) {
            why += std::string(": ") + ReasonName(*p.symbols[f]->reason);
          }
        }
        n.user_unnamed_why.push_back(why);
      }
    }
    out.push_back(std::move(n));
  }
  return out;
}

std::string Describe(const NamedStack& s) {
  std::string out;
  for (const std::string& k : s.kernel) out += (k.empty() ? "?" : k) + " ";
  out += "|";
  for (size_t i = 0; i < s.user.size(); ++i) {
    out += " " + (s.user[i].empty() ? "?[" + s.user_unnamed_why[i] + "]" : s.user[i]);
  }
  return out + " (x" + std::to_string(s.count) + ")";
}

bool HasChain(const std::vector<std::string>& frames, const std::vector<std::string>& chain) {
  if (chain.size() > frames.size()) return false;
  for (size_t i = 0; i + chain.size() <= frames.size(); ++i) {
    if (std::equal(chain.begin(), chain.end(), frames.begin() + static_cast<long>(i))) {
      return true;
    }
  }
  return false;
}

void Symbolize(Recorder& rec) { SymbolizeProfile(rec.profile()); }

}  // namespace stacksym
