#pragma once
// Grammar: a context-free grammar over bytes, written in GBNF (the notation
// of llama.cpp's `grammar` parameter), and a Matcher that follows text
// through it. Used for constrained sampling (token_mask.h): the server's
// `grammar`, `response_format` (json_object, json_schema) and tool calls
// with `tool_choice: required`.
//
// GBNF as accepted here:
//   name ::= alternatives            rules; `root` is where text starts
//   a b c                            sequence
//   a | b                            alternatives
//   "text"                           literal; escapes \n \r \t \\ \" \' \xHH \uHHHH \UHHHHHHHH
//   [a-z0-9_] [^"\\]                 character class of code points (\] \[ \- \^ and the escapes above)
//   .                                any code point
//   ( ... )                          group
//   x* x+ x? x{n} x{n,} x{n,m}       repetition (m <= 1000)
//   # comment                        to the end of the line
// Names are [A-Za-z0-9_-]+. A rule may be defined once; every name used must
// be defined; left recursion (a rule that can reach itself before reading a
// byte) and rules that can never finish are refused at parse time, so a
// Matcher never loops and every state it reaches can still finish.
//
// Code points are matched as their UTF-8 bytes: a character class becomes
// alternatives of byte ranges (U+0080 and up split by encoded length), so a
// token that ends in the middle of a character is judged byte by byte.

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/base/status.h"

namespace strata::grammar {

struct GrammarLimits {
  size_t max_text_bytes = 1 << 20;  // GBNF text
  size_t max_elements = 1 << 20;    // after repetition is expanded
  int max_nesting = 64;             // parentheses
};

class Grammar;

// One element of a rule's alternative.
struct Element {
  enum Kind : uint8_t { kBytes, kRule, kEnd };
  Kind kind = kEnd;
  uint32_t arg = 0;  // kBytes: index into byte_sets; kRule: rule id
};

class Grammar {
 public:
  // Parses and checks GBNF text. Errors name the line and column.
  static Result<std::shared_ptr<const Grammar>> Parse(std::string_view gbnf, const GrammarLimits& limits = {});

  // The compiled form, for the Matcher: every alternative is a run of
  // elements ending in kEnd inside `elements`; `rules[r]` lists where its
  // alternatives start.
  const std::vector<Element>& elements() const { return elements_; }
  const std::vector<std::vector<uint32_t>>& rules() const { return rules_; }
  // 256-bit byte sets (4 x 64 bits).
  bool InSet(uint32_t set, uint8_t byte) const {
    return (byte_sets_[set][byte >> 6] >> (byte & 63)) & 1u;
  }
  uint32_t root() const { return root_; }
  const std::string& rule_name(uint32_t r) const { return names_[r]; }
  size_t n_rules() const { return rules_.size(); }

 private:
  friend class GrammarBuilder;
  std::vector<Element> elements_;
  std::vector<std::vector<uint32_t>> rules_;
  std::vector<std::array<uint64_t, 4>> byte_sets_;
  std::vector<std::string> names_;
  uint32_t root_ = 0;
};

// A parse stack: element positions, return points first, the current
// terminal (a kBytes element) on top. Empty: the text may end here.
using Stack = std::vector<uint32_t>;
// Parse stacks a Matcher keeps at most (an ambiguous grammar can multiply
// them); beyond, the surplus is dropped (which can only refuse text) and
// the expansion reports an overflow (ExpansionStats below).
inline constexpr size_t kMaxStacks = 128;
// Steps one byte's expansion may take. Expansion follows each intermediate
// stack once, however many paths of an ambiguous grammar reach it; past
// this budget the rest are dropped: like the stack limit, that can only
// refuse text, never accept it.
inline constexpr size_t kMaxExpansionSteps = 1 << 12;

// What expansions cost, and whether one hit a limit (kMaxStacks stacks or
// kMaxExpansionSteps steps for one byte): then paths were dropped, and a
// caller that must not disagree with itself treats the grammar as too
// ambiguous to enforce.
struct ExpansionStats {
  bool overflow = false;
  uint64_t steps = 0;
};

// The stacks after reading `byte` from `in`, each followed through rule
// references and finished alternatives until its top is a terminal (or it
// is empty: the text may end), once each, at most `limit`; false when none
// survives.
bool AdvanceStacks(const Grammar& g, const std::vector<Stack>& in, uint8_t byte, std::vector<Stack>* out,
                   size_t limit, ExpansionStats* stats = nullptr);
// Reads `bytes` from `stacks` (AdvanceStacks byte by byte). Returns false
// as soon as no stack survives; `stacks` then holds no meaning.
bool ReadBytes(const Grammar& g, std::vector<Stack>* stacks, std::string_view bytes, ExpansionStats* stats = nullptr);

// Where a text stands in a grammar: the set of parse stacks that read it.
// A stack is a list of element positions (return points, then the current
// terminal on top); an empty stack means the text may end here.
class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const Grammar> g);

  // Reads bytes. Returns false, leaving the matcher unchanged, when the text
  // cannot continue with them.
  bool Accept(std::string_view bytes);
  // The text so far is a whole sentence of the grammar.
  bool CanEnd() const;
  // Only ending is possible (no byte can follow).
  bool MustEnd() const;
  // An expansion hit a limit: the grammar is too ambiguous to enforce
  // (the server ends the request with an error).
  bool overflowed() const { return stats_.overflow; }
  const Grammar& grammar() const { return *g_; }

  const std::vector<Stack>& stacks() const { return stacks_; }

 private:
  friend class TokenMask;
  std::shared_ptr<const Grammar> g_;
  std::vector<Stack> stacks_;
  ExpansionStats stats_;
};

}  // namespace strata::grammar
