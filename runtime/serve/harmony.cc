#include "runtime/serve/harmony.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "runtime/serve/text_scan.h"
#include "runtime/serve/utf8_stream.h"

namespace strata::serve {
namespace {

constexpr std::string_view kStart = "<|start|>";
constexpr std::string_view kChannel = "<|channel|>";
constexpr std::string_view kMessage = "<|message|>";
constexpr std::string_view kEnd = "<|end|>";
constexpr std::string_view kCall = "<|call|>";
constexpr std::string_view kReturn = "<|return|>";
// What ends a message's body.
constexpr std::string_view kBodyEnds[] = {kEnd, kCall, kReturn, kStart};

// The word after `key` in a header ("analysis" after <|channel|>,
// "functions.get_weather" after "to="), up to a space or a marker.
std::string WordAfter(std::string_view header, std::string_view key) {
  const size_t at = header.find(key);
  if (at == std::string_view::npos) return "";
  std::string_view rest = header.substr(at + key.size());
  size_t n = 0;
  while (n < rest.size() && !IsSpace(rest[n]) && rest[n] != '<') ++n;
  return std::string(rest.substr(0, n));
}

}  // namespace

bool IsHarmonyTemplate(std::string_view source) {
  return source.find("<|channel|>") != std::string_view::npos && source.find("<|message|>") != std::string_view::npos;
}

HarmonyStreamer::Out HarmonyStreamer::Push(std::string_view text) {
  Out out;
  pending_.append(text);
  Run(&out, false);
  return out;
}

HarmonyStreamer::Out HarmonyStreamer::Finish() {
  Out out;
  Run(&out, true);
  if (where_ == Where::kBody) EndMessage(&out);
  // Output that never opened a message is not harmony: it is content.
  if (!any_message_) out.content += header_;
  header_.clear();
  return out;
}

void HarmonyStreamer::EndMessage(Out* out) {
  if (!recipient_.empty() && tools_) {
    ToolCall call;
    call.name = recipient_.substr(recipient_.rfind('.') + 1);
    nlohmann::ordered_json args = nlohmann::ordered_json::parse(Trim(call_body_), nullptr, false);
    if (!call.name.empty() && SanitizeUtf8(call.name) == call.name && !args.is_discarded() && args.is_object()) {
      call.arguments = args.dump();
      out->calls.push_back(std::move(call));
    } else {
      out->content += call_body_;  // not a call after all: nothing is lost
    }
  }
  call_body_.clear();
  recipient_.clear();
  channel_.clear();
  header_.clear();
  where_ = Where::kHeader;
}

void HarmonyStreamer::Run(Out* out, bool final) {
  while (!pending_.empty()) {
    if (where_ == Where::kHeader) {
      const size_t at = pending_.find(kMessage);
      if (at == std::string::npos) {
        // The whole header waits for its <|message|> (a header is short).
        const size_t keep = final ? 0 : PartialTagAtEnd(pending_, kMessage);
        header_.append(pending_, 0, pending_.size() - keep);
        pending_.erase(0, pending_.size() - keep);
        return;
      }
      header_.append(pending_, 0, at);
      pending_.erase(0, at + kMessage.size());
      channel_ = WordAfter(header_, kChannel);
      const std::string to = WordAfter(header_, "to=");
      recipient_ = to.rfind("functions.", 0) == 0 ? to : "";
      any_message_ = true;
      where_ = Where::kBody;
      continue;
    }
    // The body, up to the first marker that ends it.
    size_t at = std::string::npos, len = 0;
    for (std::string_view m : kBodyEnds) {
      const size_t f = pending_.find(m);
      if (f < at) at = f, len = m.size();
    }
    size_t take = at;
    if (at == std::string::npos) {
      size_t keep = 0;
      if (!final)
        for (std::string_view m : kBodyEnds) keep = std::max(keep, PartialTagAtEnd(pending_, m));
      take = pending_.size() - keep;
    }
    const std::string_view body(pending_.data(), take);
    if (!recipient_.empty() && tools_) call_body_.append(body);
    else if (channel_ == "analysis") out->reasoning.append(body);
    else out->content.append(body);
    const bool starts_header = at != std::string::npos && pending_.compare(at, len, kStart) == 0;
    pending_.erase(0, at == std::string::npos ? take : at + len);
    if (at == std::string::npos) return;
    EndMessage(out);
    if (starts_header) header_ = std::string(kStart);  // "<|start|>assistant..." follows
  }
}

}  // namespace strata::serve
