#include "runtime/chat/chat_template.h"

#include "runtime/chat/jinja.h"

namespace strata {

Result<ChatTemplate> ChatTemplate::FromPack(std::string_view source, std::string bos_token, std::string eos_token) {
  ChatTemplate t;
  t.bos_token = std::move(bos_token);
  t.eos_token = std::move(eos_token);
  if (source.empty()) {
    t.fallback = true;
    return t;
  }
  auto parsed = jinja::Template::Parse(source);
  if (!parsed.ok()) return Unsupported("the pack's chat template cannot be read: " + parsed.status().message());
  t.jinja = std::make_shared<const jinja::Template>(std::move(*parsed));
  t.source = std::string(source);
  t.chatml_markers = source.find("<|im_end|>") != std::string_view::npos;
  t.thinking = source.find("</think>") != std::string_view::npos;
  auto sample = t.Render({{"user", "Hello", nullptr}}, true);
  if (!sample.ok())
    return Unsupported("the pack's chat template cannot render a one-message chat: " + sample.status().message());
  if (sample->find("Hello") == std::string::npos)
    return Unsupported("the pack's chat template leaves the message out of the prompt (a one-message chat "
                       "\"Hello\" rendered as \"" + sample->substr(0, 120) + "\")");
  return t;
}

Result<ChatTemplate> ChatTemplate::FromVocab(const tokenizer::Vocab& vocab, std::optional<std::string_view> source) {
  auto text = [&](int32_t id) {
    return id >= 0 && static_cast<size_t>(id) < vocab.tokens.size() ? vocab.tokens[static_cast<size_t>(id)]
                                                                     : std::string();
  };
  return FromPack(source.value_or(vocab.chat_template), text(vocab.special.bos), text(vocab.special.eos));
}

Result<std::string> ChatTemplate::Render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                         const nlohmann::ordered_json& extra) const {
  if (!jinja) {  // ChatML
    std::string out;
    for (const ChatMessage& m : messages) out += "<|im_start|>" + m.role + "\n" + m.content + "<|im_end|>\n";
    if (add_generation_prompt) out += "<|im_start|>assistant\n";
    return out;
  }
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) {
    nlohmann::ordered_json j = {{"role", m.role}, {"content", m.content}};
    if (m.extra.is_object())
      for (auto it = m.extra.begin(); it != m.extra.end(); ++it) j[it.key()] = it.value();
    list.push_back(std::move(j));
  }
  context["messages"] = std::move(list);
  context["add_generation_prompt"] = add_generation_prompt;
  context["bos_token"] = bos_token;
  context["eos_token"] = eos_token;
  if (extra.is_object())
    for (auto it = extra.begin(); it != extra.end(); ++it) context[it.key()] = it.value();
  return jinja->Render(context);
}

}  // namespace strata
