// Token -> text (llama.cpp's token_to_piece and the clean-up pass of
// detokenize).

#include <cstdio>

#include "runtime/tokenizer/tokenizer_data.h"
#include "runtime/tokenizer/unicode.h"

namespace strata::tokenizer {
namespace {

constexpr std::string_view kEscapedSpace = "\xE2\x96\x81";  // U+2581

std::string UnescapeSpaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, kEscapedSpace.size(), kEscapedSpace) == 0) {
      out += ' ';
      i += kEscapedSpace.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

// Byte-level text back to bytes. A code point outside the byte alphabet is
// written as llama.cpp's llama_decode_text writes it:
// "[UNK_BYTE_0x<hex of its UTF-8>" + the whole token text + "]".
std::string DecodeByteLevel(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (uint32_t cp : DecodeUtf8(text)) {
    int byte = UnicodeToByte(cp);
    if (byte >= 0) {
      out += static_cast<char>(byte);
      continue;
    }
    std::string utf8;
    AppendUtf8(cp, &utf8);
    out += "[UNK_BYTE_0x";
    for (char c : utf8) {
      char hex[3];
      std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned>(static_cast<uint8_t>(c)));
      out += hex;
    }
    out += text;
    out += ']';
  }
  return out;
}

char ByteOfByteToken(std::string_view text) {  // "<0xHH>", validated
  return static_cast<char>(std::stoi(std::string(text.substr(3, 2)), nullptr, 16));
}

}  // namespace

std::string BuildPiece(const TokenizerData& d, int32_t id) {
  const std::string& text = d.vocab.tokens[static_cast<size_t>(id)];
  switch (d.type(id)) {
    case TokenType::kControl:
    case TokenType::kUnknown:
    case TokenType::kUserDefined:
      return text;
    case TokenType::kNormal:
      return d.vocab.model == VocabModel::kBpe ? DecodeByteLevel(text) : UnescapeSpaces(text);
    case TokenType::kByte:
      return std::string(1, ByteOfByteToken(text));
    case TokenType::kUnused:
    case TokenType::kUndefined:
      break;
  }
  return "";
}

// clean_up_tokenization_spaces, pass for pass as llama_detokenize runs it in
// place: (1) drop a space before ? ! . ,  (2) " ' " -> "'"  (3) drop the space
// before 's 'm 're 've. Each pass reads the output of the previous one and
// compares against bytes it may itself have overwritten, which matters for
// inputs like "a ' ' b"; the loops below keep that exact behaviour.
void CleanUpSpaces(std::string* s) {
  std::string& text = *s;
  size_t total = text.size();

  size_t n = total;
  total = n ? 1 : 0;
  for (size_t i = 1; i < n; ++i) {
    const char x = text[i];
    if (text[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
    text[total++] = x;
  }

  n = total;
  total = n ? 1 : 0;
  for (size_t i = 1; i < n; ++i) {
    const char x = text[i];
    if (x == '\'' && i + 1 < n && text[i - 1] == ' ' && text[i + 1] == ' ') {
      --total;
      text[++i] = '\0';
    }
    text[total++] = x;
  }

  n = total;
  total = n ? 1 : 0;
  for (size_t i = 1; i < n; ++i) {
    const char x = text[i];
    if (text[i - 1] == ' ' && x == '\'' && i + 1 < n) {
      const char x1 = text[i + 1];
      if (x1 == 's' || x1 == 'm') {
        --total;
      } else if (x1 != 't' && x1 != 'd' && i + 2 < n) {
        const char x2 = text[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
      }
    }
    text[total++] = x;
  }
  text.resize(total);
}

}  // namespace strata::tokenizer
