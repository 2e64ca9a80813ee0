// ToFrameSymbols: the one conversion from a symbolizer's answer to what a profile keeps, used
// by the profile symbolizer and the symbolization server alike, so that a frame reads the same
// whichever of them answered it.
#include <utility>

#include "stacksym/frame.h"

namespace stacksym {

FrameSymbols ToFrameSymbols(SymbolizedAddress&& answer) {
  FrameSymbols out;
  if (!answer.frames.empty()) {
    out.lines = std::move(answer.frames);
  } else if (!answer.symbol.empty() || !answer.raw_symbol.empty()) {
    SourceFrame line;
    line.function = std::move(answer.symbol);
    line.raw_function = std::move(answer.raw_symbol);
    out.lines.push_back(std::move(line));
  } else {
    out.reason = answer.reason.value_or(Reason::kNoSymbol);
  }
  return out;
}

}  // namespace stacksym
