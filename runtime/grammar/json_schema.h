#pragma once
// JSON Schema to GBNF (grammar.h): the grammar of the JSON texts a schema
// accepts, for `response_format: {"type": "json_schema"}`, `json_object`,
// and tool-call arguments. Output is compact-ish JSON: whitespace between
// tokens is limited (at most one space, or a newline and up to 20 spaces or
// tabs), numbers and strings have bounded lengths where the schema bounds
// them, so a constrained generation always finishes.
//
// Supported (anything else that constrains values is refused by name, never
// ignored): type (one or a list), properties, required, additionalProperties
// (false, true or a schema; absent means false, as OpenAI's strict mode),
// items, prefixItems, minItems, maxItems, enum, const, anyOf, oneOf (as
// anyOf), allOf of object schemas (merged), $ref to "#", "#/$defs/..." and
// "#/definitions/...", minLength and maxLength of strings, nullable.
// Annotations are ignored: title, description, examples, default, $schema,
// $id, $comment, deprecated, readOnly, writeOnly.

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/base/status.h"

namespace strata::grammar {

class GbnfBuilder {
 public:
  // Adds the rules matching `schema` (a JSON value of that schema, no
  // surrounding whitespace); returns the rule's name. Errors name the
  // schema path ("$.properties.age: 'minimum' is not supported").
  Result<std::string> AddSchema(const nlohmann::ordered_json& schema, std::string_view name_hint);
  // Adds `name_hint ::= body` under a name not yet used; returns the name.
  std::string AddRule(std::string_view name_hint, const std::string& body);
  // The whole grammar: `root ::= root_body` and every rule added.
  std::string Text(const std::string& root_body) const;
  // The rule for whitespace between JSON tokens.
  std::string Ws();

 private:
  friend class SchemaVisitor;
  struct RefRule {
    std::string name;
    bool in_progress = false;
    int containers = 0;  // containers_ when its body was started (left-recursion check)
  };
  // A fresh rule name for `hint` with an empty body (filled by SetBody): for
  // rules that refer to themselves.
  std::string Reserve(std::string_view name_hint);
  void SetBody(const std::string& name, const std::string& body);
  // The rules of any JSON value, object (any_object_) and array (any_array_).
  std::string AnyValue();

  std::vector<std::pair<std::string, std::string>> rules_;  // name, body; in order
  std::unordered_map<std::string, size_t> rule_index_;     // name -> rules_ index
  std::unordered_map<std::string, std::string> by_body_;   // body -> name: identical rules shared
  nlohmann::ordered_json root_schema_;                      // of the first AddSchema, for $ref
  bool have_root_ = false;
  std::map<std::string, RefRule> refs_;                     // $ref target -> its rule
  std::string ws_, any_value_, any_object_, any_array_;
  int containers_ = 0;                                      // objects and arrays entered
};

// The GBNF of JSON texts matching `schema`.
Result<std::string> JsonSchemaToGbnf(const nlohmann::ordered_json& schema);
// The GBNF of any JSON object (response_format json_object).
std::string JsonObjectGbnf();
// `bytes` as a GBNF literal ("..." with escapes).
std::string GbnfLiteral(std::string_view bytes);
// One code point inside a GBNF character class (letters and digits as
// themselves, others as \xHH, \uHHHH or \UHHHHHHHH).
std::string GbnfClassChar(uint32_t cp);

}  // namespace strata::grammar
