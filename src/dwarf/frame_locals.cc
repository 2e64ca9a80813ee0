#include "dwarf/frame_locals.h"

#include <optional>
#include <span>

#include "base/byte_cursor.h"
#include "dwarf/die_chain.h"
#include "dwarf/die_reader.h"
#include "dwarf/dwarf_constants.h"
#include "dwarf/variable_table.h"

namespace stacksym::dwarf {

namespace {

// Function nesting deeper than this (inlined into inlined into ...) is not real output.
constexpr int kMaxDepth = 256;
constexpr uint16_t kAtFrameBase = 0x40;             // DW_AT_frame_base
constexpr uint16_t kAtLlvmTagOffset = 0x3e03;       // DW_AT_LLVM_tag_offset
constexpr uint8_t kOpFbreg = 0x91;                  // DW_OP_fbreg
constexpr uint8_t kOpReg0 = 0x50, kOpReg31 = 0x6f;  // DW_OP_reg0..31
constexpr uint8_t kOpBreg0 = 0x70;                  // DW_OP_breg0
constexpr uint8_t kOpDeref = 0x06;                  // DW_OP_deref

// The function the locals found below a subroutine DIE are reported under.
struct Function {
  std::string name;                  // DWARF's short name
  std::optional<unsigned> base_reg;  // DW_AT_frame_base DW_OP_regN: that N
};

class Walker {
 public:
  Walker(DwarfFile& file, const LineTable* line, std::string_view comp_dir,
         std::vector<FrameLocal>* out)
      : file_(file), line_(line), comp_dir_(comp_dir), sizes_(file), out_(out) {}

  void Run(uint64_t die_offset) {
    OpenedDie die;
    if (!OpenDie(file_, die_offset, &die)) return;
    if (!die.unit->die_read && !file_.ReadUnitDie(*die.unit)) return;
    address_size_ = die.unit->ctx.address_size;
    Function function = Describe(die_offset);
    (void)Walk(die.cursor, *die.unit, *die.abbrevs, *die.abbrev, function, 0);
  }

 private:
  // The short name and frame-base register of the subroutine DIE at `offset`.
  Function Describe(uint64_t offset) {
    Function f;
    f.name = std::string(DieChain(file_, offset).Name(/*short_name=*/true));
    OpenedDie die;
    if (!OpenDie(file_, offset, &die)) return f;
    (void)ReadDieAttrs(die.cursor, *die.abbrevs, *die.abbrev, die.unit->ctx,
                       [&](uint16_t at, const AttrValue& v) {
                         if (at != kAtFrameBase || v.kind != ValueKind::kBlock || v.value == 0 ||
                             v.data == nullptr)
                           return;
                         // The frame base held in register N (DW_OP_regN, as LLVM reads
                         // it): a local at DW_OP_bregN M is at frame offset M.
                         if (v.data[0] >= kOpReg0 && v.data[0] <= kOpReg31)
                           f.base_reg = v.data[0] - kOpReg0;
                       });
    return f;
  }

  // The DIE whose abbreviation was just read at `c`: its attributes and subtree; the cursor
  // ends after it. False on bad data.
  bool Walk(ByteCursor& c, const UnitInfo& unit, const AbbrevTable& abbrevs, const Abbrev& abbrev,
            const Function& function, int depth) {
    if (abbrev.tag == DW_TAG_variable || abbrev.tag == DW_TAG_formal_parameter) {
      if (!AddLocal(c, unit, abbrevs, abbrev, function)) return false;
      // A variable's children are not looked at (as in LLVM).
      return !abbrev.has_children || SkipChildren(c, abbrevs, unit, 0);
    }
    DieRef origin;
    if (!ReadDieAttrs(c, abbrevs, abbrev, unit.ctx, [&](uint16_t at, const AttrValue& v) {
          if (at == DW_AT_abstract_origin) file_.Reference(unit, v, &origin);
        })) {
      return false;
    }
    if (!abbrev.has_children) return true;
    Function inner;
    const Function* children_function = &function;
    if (abbrev.tag == DW_TAG_inlined_subroutine && origin.file == &file_) {
      inner = Describe(origin.offset);
      children_function = &inner;
    }
    if (depth >= kMaxDepth) return false;
    while (true) {
      uint64_t code = c.Uleb128();
      if (!c.ok()) return false;
      if (code == 0) return true;
      const Abbrev* child = abbrevs.Find(code);
      if (child == nullptr) return false;
      if (!Walk(c, unit, abbrevs, *child, *children_function, depth + 1)) return false;
    }
  }

  bool AddLocal(ByteCursor& c, const UnitInfo& unit, const AbbrevTable& abbrevs,
                const Abbrev& abbrev, const Function& function) {
    FrameLocal local;
    local.function = function.name;
    ByteCursor attrs = c;  // to read the description from, when the DIE has no origin
    AttrValue location;
    bool has_location = false;
    DieRef origin;
    bool ok = ReadDieAttrs(c, abbrevs, abbrev, unit.ctx, [&](uint16_t at, const AttrValue& v) {
      if (at == DW_AT_location) location = v, has_location = true;
      if (at == kAtLlvmTagOffset) local.tag_offset = AsUnsignedConstant(v);
      if (at == DW_AT_abstract_origin) file_.Reference(unit, v, &origin);
    });
    if (!ok) return false;
    if (has_location) {
      ForEachLocationExpression(file_, unit, location, [&](std::span<const uint8_t> expr) {
        local.frame_offset = FrameOffset(expr, function.base_reg);
        return local.frame_offset.has_value();
      });
    }
    // Name, type and declaration come from the abstract origin when there is one.
    uint64_t described = origin.file == &file_ ? origin.offset : 0;
    if (described != 0) {
      OpenedDie die;
      if (OpenDie(file_, described, &die) && (die.unit->die_read || file_.ReadUnitDie(*die.unit))) {
        ReadDescription(die.cursor, *die.unit, *die.abbrevs, *die.abbrev, &local);
      }
    } else {
      ReadDescription(attrs, unit, abbrevs, abbrev, &local);
    }
    out_->push_back(std::move(local));
    return true;
  }

  // LLVM's getExpressionFrameOffset: DW_OP_fbreg N (or DW_OP_breg<frame base reg> N), alone
  // or followed by DW_OP_deref.
  static std::optional<int64_t> FrameOffset(std::span<const uint8_t> expr,
                                            std::optional<unsigned> base_reg) {
    if (expr.empty()) return std::nullopt;
    bool fbreg = expr[0] == kOpFbreg;
    bool breg = base_reg && expr[0] == kOpBreg0 + *base_reg;
    if (!fbreg && !breg) return std::nullopt;
    ByteCursor e(expr.subspan(1));
    int64_t offset = e.Sleb128();
    if (!e.ok()) return std::nullopt;
    if (e.at_end()) return offset;
    if (e.remaining() == 1 && e.U8() == kOpDeref) return offset;
    return std::nullopt;
  }

  void ReadDescription(ByteCursor& c, const UnitInfo& unit, const AbbrevTable& abbrevs,
                       const Abbrev& abbrev, FrameLocal* local) {
    (void)ReadDieAttrs(c, abbrevs, abbrev, unit.ctx, [&](uint16_t at, const AttrValue& v) {
      switch (at) {
        case DW_AT_name: {
          std::string_view name;
          if (file_.String(unit, v, &name)) local->name = std::string(name);
          break;
        }
        case DW_AT_type: {
          DieRef type;
          if (file_.Reference(unit, v, &type) && type.file == &file_)
            local->size = sizes_.Size(type.offset, address_size_);
          break;
        }
        case DW_AT_decl_file:
          // The file index is read in the requested unit's line table, as LLVM does.
          if (std::optional<uint64_t> index = AsUnsignedConstant(v); index && line_) {
            if (!line_->FilePath(*index, comp_dir_, &local->decl_file)) local->decl_file.clear();
          }
          break;
        case DW_AT_decl_line:
          local->decl_line = AsUnsignedConstant(v).value_or(0);
          break;
        default:
          break;
      }
    });
  }

  DwarfFile& file_;
  const LineTable* line_;
  std::string_view comp_dir_;
  TypeSizer sizes_;
  std::vector<FrameLocal>* out_;
  uint8_t address_size_ = 8;
};

}  // namespace

void ReadFrameLocals(DwarfFile& file, uint64_t die_offset, const LineTable* line,
                     std::string_view comp_dir, std::vector<FrameLocal>* out) {
  Walker(file, line, comp_dir, out).Run(die_offset);
}

}  // namespace stacksym::dwarf
