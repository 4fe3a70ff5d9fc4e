// GBNF grammars (runtime/grammar/grammar.h) and the token mask of
// constrained sampling (token_mask.h). The mask is compared with its plain
// reference, TokenMasker::Allows (each token read through the matcher on its
// own), on random small vocabularies and on Qwen2's real 151,646 tokens.

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "runtime/grammar/grammar.h"
#include "runtime/grammar/token_mask.h"
#include "tests/testing/gpu_test_device.h"
#include "tests/testing/test_data.h"
#include "tests/testing/tokenizer_vocabs.h"

namespace strata::grammar {
namespace {

std::shared_ptr<const Grammar> MustParse(const std::string& text) {
  auto g = Grammar::Parse(text);
  EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << text;
  return g.ok() ? *g : nullptr;
}

// Whether `text` is a whole sentence of the grammar.
bool Matches(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  Matcher m(g);
  return m.Accept(text) && m.CanEnd();
}

// Whether `text` can begin a sentence.
bool Prefix(const std::shared_ptr<const Grammar>& g, std::string_view text) { return Matcher(g).Accept(text); }

std::string ParseError(const std::string& text) {
  auto g = Grammar::Parse(text);
  return g.ok() ? "" : g.status().message();
}

TEST(Grammar, LiteralsAlternativesAndGroups) {
  auto g = MustParse("root ::= \"yes\" | \"no\" | (\"may\" \"be\")");
  EXPECT_TRUE(Matches(g, "yes"));
  EXPECT_TRUE(Matches(g, "no"));
  EXPECT_TRUE(Matches(g, "maybe"));
  EXPECT_FALSE(Matches(g, "ye"));
  EXPECT_TRUE(Prefix(g, "ye"));
  EXPECT_FALSE(Prefix(g, "yess"));
  EXPECT_FALSE(Matches(g, ""));
}

TEST(Grammar, RepetitionBounds) {
  auto g = MustParse("root ::= [a-c]{2,4} \"!\"? d*\nd ::= \"x\" | \"yz\"");
  EXPECT_FALSE(Matches(g, "a"));
  EXPECT_TRUE(Matches(g, "ab"));
  EXPECT_TRUE(Matches(g, "abca!"));
  EXPECT_FALSE(Matches(g, "abcab"));
  EXPECT_TRUE(Matches(g, "cc!xyzx"));
  EXPECT_FALSE(Matches(g, "cc!!"));
  EXPECT_FALSE(Matches(g, "ccy"));
  auto plus = MustParse("root ::= (\"ab\")+");
  EXPECT_FALSE(Matches(plus, ""));
  EXPECT_TRUE(Matches(plus, "ababab"));
  EXPECT_FALSE(Matches(plus, "aba"));
  auto exact = MustParse("root ::= \"0\"{3}");
  EXPECT_TRUE(Matches(exact, "000"));
  EXPECT_FALSE(Matches(exact, "0000"));
  auto open = MustParse("root ::= \"0\"{2,}");
  EXPECT_FALSE(Matches(open, "0"));
  EXPECT_TRUE(Matches(open, "000000000"));
}

TEST(Grammar, CharacterClassesAreCodePointsMatchedAsUtf8) {
  auto g = MustParse("root ::= [^\"\\\\]* \"\\\"\"");
  EXPECT_TRUE(Matches(g, "caf\xC3\xA9 \xE6\x88\x91 \xF0\x9F\x9A\x80\""));
  EXPECT_FALSE(Prefix(g, "a\\"));
  EXPECT_FALSE(Prefix(g, "\xC3\xC3"));          // not UTF-8
  EXPECT_FALSE(Prefix(g, "\xED\xA0\x80"));      // a surrogate
  EXPECT_TRUE(Prefix(g, "\xE6\x88"));           // half a character can still go on
  auto range = MustParse("root ::= [\\u00e0-\\u00ff\\U0001F600-\\U0001F64F]+");
  EXPECT_TRUE(Matches(range, "\xC3\xA0\xC3\xBF\xF0\x9F\x98\x80"));
  EXPECT_FALSE(Prefix(range, "\xC3\x9F"));  // U+00DF
  EXPECT_FALSE(Prefix(range, "a"));
  auto any = MustParse("root ::= . .");
  EXPECT_TRUE(Matches(any, "\xE6\x88\x91z"));
  EXPECT_FALSE(Matches(any, "abc"));
  auto esc = MustParse("root ::= \"\\x41\\u00e9\\n\\t\" [\\]\\-]");
  EXPECT_TRUE(Matches(esc, "A\xC3\xA9\n\t]"));
  EXPECT_TRUE(Matches(esc, "A\xC3\xA9\n\t-"));
}

TEST(Grammar, RulesSpanLinesAndTakeComments) {
  auto g = MustParse(
      "# a list\n"
      "root ::= \"[\" ws ( item ( \",\" ws item )* )? \"]\"   # items\n"
      "item ::=\n"
      "  [0-9]+\n"
      "  | \"null\"\n"
      "ws ::= [ \\t\\n]*\n");
  EXPECT_TRUE(Matches(g, "[]"));
  EXPECT_TRUE(Matches(g, "[ 1,2, null]"));
  EXPECT_FALSE(Matches(g, "[1,]"));
}

TEST(Grammar, RecursionThatReadsFirstIsFine) {
  auto g = MustParse("root ::= \"(\" root \")\" | \"x\"");
  EXPECT_TRUE(Matches(g, "((x))"));
  EXPECT_FALSE(Matches(g, "((x)"));
}

TEST(Grammar, BadGrammarsAreRefusedWithWhereAndWhat) {
  EXPECT_NE(ParseError("").find("empty"), std::string::npos);
  EXPECT_NE(ParseError("item ::= \"a\"").find("no 'root' rule"), std::string::npos);
  EXPECT_NE(ParseError("root ::= item").find("'item' is used but never defined"), std::string::npos);
  EXPECT_NE(ParseError("root ::= \"a\"\nroot ::= \"b\"").find("line 2, column 1: rule 'root' is defined twice"),
            std::string::npos);
  EXPECT_NE(ParseError("root ::= \"abc").find("unterminated literal"), std::string::npos);
  EXPECT_NE(ParseError("root ::= [abc").find("unterminated character class"), std::string::npos);
  EXPECT_NE(ParseError("root ::= (\"a\"").find("expected ')'"), std::string::npos);
  EXPECT_NE(ParseError("root ::= \"a\"{3,2}").find("m is smaller than n"), std::string::npos);
  EXPECT_NE(ParseError("root ::= \"a\"{1001}").find("above 1000"), std::string::npos);
  EXPECT_NE(ParseError("root ::= \"\\q\"").find("unknown escape"), std::string::npos);
  EXPECT_NE(ParseError("root ::= \"\\ud800\"").find("not a Unicode scalar"), std::string::npos);
  EXPECT_NE(ParseError("root ::= [^\\x00-\\U0010FFFF]").find("matches nothing"), std::string::npos);
  EXPECT_NE(ParseError("root ::= root \"a\" | \"b\"").find("'root' is left-recursive"), std::string::npos);
  EXPECT_NE(ParseError("root ::= x\nx ::= y? x \"a\" | \"b\"\ny ::= \"c\"").find("'x' is left-recursive"),
            std::string::npos);
  EXPECT_NE(ParseError("root ::= \"(\" root \")\"").find("'root' can never finish"), std::string::npos);
  EXPECT_NE(ParseError("root ::= \"a\" ]").find("line 1, column 14"), std::string::npos);
  EXPECT_NE(ParseError(std::string("root ::= \"\xff\"")).find("invalid UTF-8"), std::string::npos);
  // Repetition that would expand past the element budget.
  GrammarLimits small;
  small.max_elements = 1000;
  auto big = Grammar::Parse("root ::= \"a\"{600} \"b\"{600}", small);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("more than 1000 elements"), std::string::npos);
  // The budget counts the UTF-8 byte-range alternatives of character classes too.
  GrammarLimits tiny;
  tiny.max_elements = 20;
  auto wide = Grammar::Parse("root ::= [^a]", tiny);
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.status().message().find("more than 20 elements"), std::string::npos);
  EXPECT_TRUE(Grammar::Parse("root ::= [a-z]", tiny).ok());
  std::string deep = "root ::= " + std::string(100, '(') + "\"a\"" + std::string(100, ')');
  EXPECT_NE(ParseError(deep).find("nest deeper than 64"), std::string::npos);
}

TEST(Grammar, AFailedAcceptLeavesTheMatcherAsItWas) {
  auto g = MustParse("root ::= \"abc\" | \"abd\"");
  Matcher m(g);
  ASSERT_TRUE(m.Accept("ab"));
  EXPECT_FALSE(m.Accept("x"));
  EXPECT_FALSE(m.Accept("cz"));
  EXPECT_TRUE(m.Accept("d"));
  EXPECT_TRUE(m.CanEnd());
  EXPECT_TRUE(m.MustEnd());
}

TEST(Grammar, TooAmbiguousGrammarsAreReportedInsteadOfFollowedForever) {
  // x+++...: every byte can close any number of the nested loops, so the
  // parse stacks multiply; following them hits a limit in milliseconds.
  auto g = MustParse("root ::= [a-z]" + std::string(40, '+'));
  Matcher m(g);
  for (int i = 0; i < 8 && !m.overflowed(); ++i) ASSERT_TRUE(m.Accept("a") || m.overflowed());
  EXPECT_TRUE(m.overflowed());
  EXPECT_LE(m.stacks().size(), kMaxStacks);
  // The check a request's new grammar gets on arrival (ProbeStart) finds it,
  // so such a grammar is refused before its prompt is read.
  auto trie = std::make_shared<const TokenTrie>(std::vector<std::string>{"a", "aa", "aaaa", "aaaaaaaa", "b", "{"});
  TokenMasker masker(g, trie);
  EXPECT_FALSE(masker.ProbeStart());
  // With a vocabulary of single bytes too (the server test's tiny model):
  // no first token overflows, the second does, so the walk finds it.
  auto bytes = std::make_shared<const TokenTrie>(std::vector<std::string>{"a", "b", "c", "{", "}"});
  TokenMasker one_byte(g, bytes);
  EXPECT_FALSE(one_byte.ProbeStart());
  TokenMasker single_step(g, bytes);
  EXPECT_TRUE(single_step.ProbeStart(32, 1));  // what a one-token probe misses
  // A plain grammar never comes near the limits.
  auto plain = MustParse("root ::= [a-z]+");
  TokenMasker fine(plain, trie);
  EXPECT_TRUE(fine.ProbeStart());
  Matcher p(plain);
  EXPECT_TRUE(p.Accept("abcdefgh"));
  EXPECT_FALSE(p.overflowed());
}

// --- the token mask -------------------------------------------------------------

std::vector<uint64_t> ReferenceMask(const TokenMasker& masker, const Matcher& m) {
  std::vector<uint64_t> bits((static_cast<size_t>(masker.trie().n_tokens()) + 63) / 64, 0);
  for (int32_t t = 0; t < masker.trie().n_tokens(); ++t)
    if (masker.Allows(m, t)) bits[static_cast<size_t>(t) >> 6] |= uint64_t{1} << (t & 63);
  return bits;
}

bool Bit(const std::vector<uint64_t>& bits, int32_t t) { return (bits[static_cast<size_t>(t) >> 6] >> (t & 63)) & 1; }

const char* kJsonGrammar = R"(
root ::= object
value ::= object | array | string | number | ("true" | "false" | "null")
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}"
array ::= "[" ws ( value ("," ws value)* )? "]"
string ::= "\"" ( [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= "-"? ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})? ws
ws ::= ( " " | "\n" [ \t]{0,20} )?
)";

// A random walk through the grammar driven by the mask: at every step the
// mask must equal the reference, and a random allowed token is read next.
void RandomWalk(const std::shared_ptr<const Grammar>& g, const std::shared_ptr<const TokenTrie>& trie, uint32_t seed,
                int steps, int* ends_seen) {
  TokenMasker masker(g, trie);
  Matcher m(g);
  std::mt19937 rng(seed);
  std::vector<uint64_t> mask;
  for (int step = 0; step < steps; ++step) {
    masker.Compute(m, &mask);
    ASSERT_FALSE(masker.overflowed());
    const std::vector<uint64_t> ref = ReferenceMask(masker, m);
    ASSERT_EQ(mask.size(), ref.size());
    for (int32_t t = 0; t < trie->n_tokens(); ++t)
      ASSERT_EQ(Bit(mask, t), Bit(ref, t)) << "seed " << seed << " step " << step << " token " << t << " '"
                                           << trie->bytes(t) << "'";
    std::vector<int32_t> allowed;
    for (int32_t t = 0; t < trie->n_tokens(); ++t)
      if (Bit(mask, t)) allowed.push_back(t);
    if (m.CanEnd()) ++*ends_seen;
    if (allowed.empty()) {
      ASSERT_TRUE(m.MustEnd()) << "no token allowed but the text cannot end (seed " << seed << ")";
      return;
    }
    // Mostly short tokens, so the walk goes deep into the structure.
    int32_t pick = allowed[rng() % allowed.size()];
    for (int k = 0; k < 3; ++k) {
      int32_t other = allowed[rng() % allowed.size()];
      if (trie->bytes(other).size() < trie->bytes(pick).size()) pick = other;
    }
    ASSERT_TRUE(m.Accept(trie->bytes(pick)));
  }
}

TEST(TokenMask, TrieHoldsEveryTokenOnceInPreOrder) {
  std::vector<std::string> vocab = {"b", "ab", "a", "", "abc", "ab", "\xff", "ba"};
  TokenTrie trie(vocab);
  ASSERT_EQ(trie.order().size(), 7u);  // the empty token is never allowed
  std::vector<std::string> seen;
  for (int32_t t : trie.order()) seen.push_back(vocab[static_cast<size_t>(t)]);
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "ab", "ab", "abc", "b", "ba", "\xff"}));
  // Every node's subtree holds exactly the tokens that start with its prefix.
  const auto& nodes = trie.nodes();
  std::vector<std::string> path;
  for (uint32_t i = 0; i < nodes.size(); ++i) {
    path.resize(nodes[i].depth - 1);
    path.push_back(std::string(1, static_cast<char>(nodes[i].byte)));
    std::string prefix;
    for (auto& p : path) prefix += p;
    for (uint32_t k = nodes[i].tok_begin; k < trie.SubtreeTokensEnd(i); ++k)
      EXPECT_EQ(vocab[static_cast<size_t>(trie.order()[k])].rfind(prefix, 0), 0u) << prefix;
    for (uint32_t k = nodes[i].tok_begin; k < nodes[i].tok_end; ++k)
      EXPECT_EQ(vocab[static_cast<size_t>(trie.order()[k])], prefix);
  }
}

TEST(TokenMask, MatchesTheReferenceOnRandomVocabularies) {
  auto g = MustParse(kJsonGrammar);
  ASSERT_TRUE(g);
  const std::string alphabet = "{}[]\",:.-+eE0123456789abcnrtuflsx \n\t\\/";
  const std::vector<std::string> utf8 = {"\xC3\xA9", "\xE6\x88\x91", "\xF0\x9F\x9A\x80", "\xC3", "\xA9", "\x88\x91"};
  int ends = 0;
  for (uint32_t seed = 1; seed <= 24; ++seed) {
    std::mt19937 rng(seed);
    std::vector<std::string> vocab;
    for (char c : alphabet) vocab.push_back(std::string(1, c));  // every character is reachable
    for (const auto& u : utf8) vocab.push_back(u);
    vocab.push_back("");  // a control token
    for (int t = 0; t < 400; ++t) {
      std::string tok;
      const int len = 1 + static_cast<int>(rng() % 6);
      for (int k = 0; k < len; ++k) {
        if (rng() % 10 == 0) {
          tok += utf8[rng() % utf8.size()];
        } else {
          tok += alphabet[rng() % alphabet.size()];
        }
      }
      vocab.push_back(tok);
    }
    for (const char* common : {"{\"", "\":", "\": ", "\",", "\"}", "true", "null", "}\n", "],", "[{"})
      vocab.push_back(common);
    auto trie = std::make_shared<const TokenTrie>(vocab);
    RandomWalk(g, trie, seed, 120, &ends);
  }
  EXPECT_GT(ends, 0);  // walks reached states where the text may end
}

TEST(TokenMask, MatchesTheReferenceOnQwen2Vocabulary) {
  STRATA_REQUIRE_SHARED_FILE(strata::testing::SharedFile("tokenizer/ggml-vocab-qwen2.gguf"));
  auto tok = strata::testing::SharedTokenizer("tokenizer/ggml-vocab-qwen2.gguf");
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  auto trie = std::make_shared<const TokenTrie>(tok->TextPieces());
  auto g = MustParse(kJsonGrammar);
  ASSERT_TRUE(g);
  int ends = 0;
  // Six steps checked against the reference over all 151k tokens in the
  // optimized build; three elsewhere (each step is a full reference mask).
  RandomWalk(g, trie, 1, testing::TestMatrix() == testing::GpuTestMatrix::kFull ? 6 : 3, &ends);
  // A state inside a string allows most of the vocabulary; right after '{',
  // only whitespace, '"' and '}' starts.
  TokenMasker masker(g, trie);
  Matcher m(g);
  std::vector<uint64_t> mask;
  ASSERT_TRUE(m.Accept("{"));
  masker.Compute(m, &mask);
  EXPECT_TRUE(Bit(mask, tok->Find("\"")));
  EXPECT_TRUE(Bit(mask, tok->Find("}")));
  EXPECT_FALSE(Bit(mask, tok->Find("a")));
  ASSERT_TRUE(m.Accept("\"key"));
  masker.Compute(m, &mask);
  size_t allowed = 0;
  for (int32_t t = 0; t < tok->n_tokens(); ++t) allowed += Bit(mask, t);
  EXPECT_GT(allowed, 140000u);
  EXPECT_TRUE(Bit(mask, tok->Find("\":")));
  EXPECT_FALSE(Bit(mask, tok->Find("\"}")));  // a key needs its ':'
}

}  // namespace
}  // namespace strata::grammar
