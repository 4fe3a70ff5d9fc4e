#pragma once
// The Jinja interpreter's parser (internal to runtime/chat/jinja*.cc): the
// expression and statement trees, and the parse of a template's source
// (whitespace control, tags, expressions), bounded in nesting.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/chat/jinja_value.h"

namespace strata::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Op : uint8_t {
    kLiteral, kName, kList, kDict, kTuple, kAttr, kItem, kSlice, kCall, kFilter, kTest, kNot, kNeg, kPos,
    kAnd, kOr, kBinary, kCompare, kCond,
  };
  Op op;
  int line = 0;
  Value literal;
  std::string name;                 // kName, kAttr, kFilter, kTest, kBinary/kCompare operator
  std::vector<ExprPtr> kids;        // operands, elements, call args, slice parts (null for omitted)
  std::vector<std::string> kwnames; // kCall/kFilter/kTest: names of the trailing keyword arguments
  bool negated = false;             // kTest: `is not`
  int height = 1;                   // levels, this one included (the parser bounds it)
};

struct Node {
  enum class Kind : uint8_t { kBlock, kText, kOutput, kIf, kFor, kSet, kSetBlock, kMacro, kBreak, kContinue, kFilterBlock };
  Kind kind = Kind::kBlock;
  int line = 0;
  std::string text;                     // kText
  std::vector<ExprPtr> exprs;           // kOutput: [e]; kIf: conditions; kFor: [iterable, filter?]; kSet: [value]
  std::vector<std::unique_ptr<Node>> children;  // kBlock: statements; kIf: one block per branch (+ else); kFor: body, else
  std::vector<std::string> names;       // kFor: targets; kSet: [name] or [ns, attr]; kMacro: [name, params...]
  std::vector<ExprPtr> defaults;        // kMacro: a default (or null) per parameter
  bool has_else = false;
  bool has_filter = false;              // kFor: `if` clause
};

using NodePtr = std::unique_ptr<Node>;

// The template's tree. Throws Error (with the line) on a syntax error.
NodePtr ParseTemplate(std::string_view source);

}  // namespace strata::jinja
