// JSON Schema to GBNF (runtime/grammar/json_schema.h): every grammar made
// here parses, accepts the JSON texts of its schema and refuses others; texts
// walked at random through a grammar are JSON of the schema; keywords that
// would be ignored are refused by name and path.

#include "runtime/grammar/json_schema.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "runtime/grammar/grammar.h"

namespace strata::grammar {
namespace {

using ojson = nlohmann::ordered_json;

std::shared_ptr<const Grammar> MustParse(const std::string& gbnf) {
  auto g = Grammar::Parse(gbnf);
  EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << gbnf;
  return g.ok() ? *g : nullptr;
}

bool Matches(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  if (!g) return false;
  Matcher m(g);
  return m.Accept(text) && m.CanEnd();
}

// Whether `text` is a whole sentence of the grammar.
bool Matches(const std::string& gbnf, std::string_view text) { return Matches(MustParse(gbnf), text); }

std::string Gbnf(std::string_view schema) {
  auto r = JsonSchemaToGbnf(ojson::parse(schema));
  EXPECT_TRUE(r.ok()) << r.status().message() << "\n" << schema;
  return r.ok() ? *r : "";
}

std::string Refusal(std::string_view schema) {
  auto r = JsonSchemaToGbnf(ojson::parse(schema));
  if (r.ok()) return "(accepted)\n" + *r;
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

// The schema's grammar parses, accepts every `valid` text (each one JSON,
// read whole and byte by byte) and refuses every `invalid` one.
void ExpectLanguage(std::string_view schema, const std::vector<std::string>& valid,
                    const std::vector<std::string>& invalid) {
  const std::string gbnf = Gbnf(schema);
  auto g = MustParse(gbnf);
  ASSERT_NE(g, nullptr);
  for (const std::string& text : valid) {
    EXPECT_FALSE(ojson::parse(text, nullptr, false).is_discarded()) << "test data is not JSON: " << text;
    EXPECT_TRUE(Matches(g, text)) << "refused: " << text << "\nschema: " << schema << "\n" << gbnf;
    Matcher m(g);
    bool all = true;
    for (char c : text) all = all && m.Accept(std::string_view(&c, 1));
    EXPECT_TRUE(all && m.CanEnd()) << "refused byte by byte: " << text;
  }
  for (const std::string& text : invalid)
    EXPECT_FALSE(Matches(g, text)) << "accepted: " << text << "\nschema: " << schema << "\n" << gbnf;
}

TEST(JsonSchema, Integers) {
  ExpectLanguage(R"({"type": "integer"})", {"0", "-5", "42", "1234567890123456", "-1234567890123456"},
                 {"", "01", "-01", "1.5", "+1", "-", "12345678901234567", "\"1\"", "1e3", " 1", "1 "});
}

TEST(JsonSchema, Numbers) {
  ExpectLanguage(R"({"type": "number"})",
                 {"0", "-0.5", "3.14", "1e10", "1E-5", "2.5e+289", "1e099", "-7", "0.0000000000000001", "1e-999",
                  "9999999999999999.9999999999999999e289"},
                 {".5", "1.", "1e", "01.5", "NaN", "Infinity", "1e1234", "1e290", "1e+999", "0.12345678901234567",
                  "--1", "true", "1e+-1"});
}

TEST(JsonSchema, BooleansAndNull) {
  ExpectLanguage(R"({"type": "boolean"})", {"true", "false"}, {"null", "True", "1", "\"true\"", "truefalse"});
  ExpectLanguage(R"({"type": "null"})", {"null"}, {"nil", "false", "\"null\"", ""});
}

TEST(JsonSchema, StringsWithEscapesAndUnicode) {
  ExpectLanguage(R"({"type": "string"})",
                 {R"("")", R"("abc")", R"("a\"b")", R"("\u00e9\n\t\\ \/ \b\f\r")", R"("\uD83D\uDE00")",
                  "\"\xC3\xA9\xE6\x97\xA5\xE6\x9C\xAC\xF0\x9F\x8E\x89\"", R"("{\"json\": [1]}")", "\"\x7F\"",
                  R"("\ud83d\ude00")", R"("\uD7FF\uE000\uFFFF\u0000")"},
                 {R"("a)", R"("\x41")", R"("\u12")", R"("\uGGGG")", "\"a\nb\"", "\"tab\there\"", "abc", R"("a""b")",
                  R"('a')", "\"\xFF\"", "\"\xC3\"",
                  // A \u surrogate only as a high-low pair (strict parsers refuse a lone one).
                  R"("\ud800")", R"("\uDC00")", R"("\ud83dx")", R"("\ud83d\u0041")", R"("\ud83d\ud83d")",
                  R"("\ude00\ud83d")", "\"\xED\xA0\x80\""});
}

TEST(JsonSchema, StringLengthCountsCharactersAndEscapes) {
  ExpectLanguage(
      R"({"type": "string", "minLength": 2, "maxLength": 4})",
      {R"("ab")", R"("abcd")", R"("\n\u0041")", "\"\xC3\xA9\xC3\xA9\"", "\"\xF0\x9F\x8E\x89\xF0\x9F\x8E\x89\""},
      {R"("a")", R"("abcde")", R"("")", R"("\n\n\n\n\n")"});
  ExpectLanguage(R"({"type": "string", "maxLength": 0})", {R"("")"}, {R"("a")"});
  ExpectLanguage(R"({"type": "string", "minLength": 3})", {R"("abc")", R"("abcdefghijklmnopqrstuvwxyz")"}, {R"("ab")"});
}

TEST(JsonSchema, LengthBoundsAboveTheParsersRepetitionLimit) {
  const std::string gbnf = Gbnf(R"({"type": "string", "minLength": 1500, "maxLength": 2500})");
  auto g = MustParse(gbnf);
  auto str = [](size_t n) { return "\"" + std::string(n, 'x') + "\""; };
  EXPECT_FALSE(Matches(g, str(1499)));
  EXPECT_TRUE(Matches(g, str(1500)));
  EXPECT_TRUE(Matches(g, str(2000)));
  EXPECT_TRUE(Matches(g, str(2500)));
  EXPECT_FALSE(Matches(g, str(2501)));
  auto g2 = MustParse(Gbnf(R"({"type": "array", "items": {"type": "integer"}, "maxItems": 3001})"));
  auto array = [](size_t n) {
    std::string s = "[";
    for (size_t i = 0; i < n; ++i) s += i ? ",7" : "7";
    return s + "]";
  };
  EXPECT_TRUE(Matches(g2, array(0)));
  EXPECT_TRUE(Matches(g2, array(3001)));
  EXPECT_FALSE(Matches(g2, array(3002)));
}

// Every subset of the properties, in the schema's order: accepted exactly
// when it holds the required ones; commas are right whichever are present.
TEST(JsonSchema, ObjectPropertiesInEverySubset) {
  const ojson schema = ojson::parse(R"({
    "type": "object",
    "properties": {
      "o1": {"type": "integer"}, "r1": {"type": "string"}, "o2": {"type": "boolean"},
      "o3": {"type": "null"}, "r2": {"type": "number"}, "o4": {"type": "string"}},
    "required": ["r1", "r2"]})");
  const std::vector<std::pair<std::string, std::string>> props = {{"o1", "1"},    {"r1", "\"x\""}, {"o2", "true"},
                                                                  {"o3", "null"}, {"r2", "2.5"},   {"o4", "\"y\""}};
  auto g = MustParse(Gbnf(schema.dump()));
  for (unsigned mask = 0; mask < 64; ++mask) {
    std::string compact = "{", spaced = "{\n  ";
    bool first = true;
    for (size_t i = 0; i < props.size(); ++i) {
      if (!(mask & (1u << i))) continue;
      if (!first) {
        compact += ",";
        spaced += ",\n  ";
      }
      first = false;
      compact += "\"" + props[i].first + "\":" + props[i].second;
      spaced += "\"" + props[i].first + "\": " + props[i].second;
    }
    compact += "}";
    spaced += "\n}";
    const bool valid = (mask & 2u) && (mask & 16u);
    EXPECT_EQ(Matches(g, compact), valid) << compact;
    EXPECT_EQ(Matches(g, spaced), valid) << spaced;
  }
  for (const std::string bad :
       {R"({"r1":"x","r2":1,})", R"({,"r1":"x","r2":1})", R"({"r1":"x",,"r2":1})", R"({"r1":"x" "r2":1})",
        R"({"r1":"x","r2":1,"zz":1})", R"({"r1":1,"r2":1})", R"({"r1":"x","r2":"1"})", R"({"r2":1,"r1":"x"})",
        R"({"r1":"x","r1":"x","r2":1})", R"({"r1" "x","r2":1})", R"({"r1":"x","r2":1)", R"("r1":"x","r2":1})"})
    EXPECT_FALSE(Matches(g, bad)) << bad;
}

TEST(JsonSchema, AllOptionalProperties) {
  ExpectLanguage(R"({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}})",
                 {"{}", "{ }", R"({"a":1})", R"({"b":2})", R"({"a":1,"b":2})", R"({ "a" : 1 , "b" : 2 })"},
                 {R"({"b":2,"a":1})", R"({,})", R"({"a":1,})", R"({"c":1})", "{  }"});
}

TEST(JsonSchema, Whitespace) {
  ExpectLanguage(R"({"type": "array", "items": {"type": "integer"}})",
                 {"[]", "[ ]", "[1,2]", "[ 1 , 2 ]", "[\n\t1,\n\t\t2\n]", "[\n" + std::string(20, ' ') + "1]"},
                 {"[  1]", "[\t1]", "[\n" + std::string(21, ' ') + "1]", "[\n\n1]", " [1]", "[1] ", "[\r\n1]"});
}

TEST(JsonSchema, NestedObjects) {
  ExpectLanguage(R"({"type": "object", "properties": {
                      "user": {"type": "object", "properties": {
                        "name": {"type": "string"},
                        "address": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
                        "required": ["name"]},
                      "tags": {"type": "array", "items": {"type": "string"}}},
                    "required": ["user"]})",
                 {R"({"user":{"name":"A"}})", R"({"user":{"name":"A","address":{"city":"B"}},"tags":["x","y"]})",
                  R"({"user": {"name": "A", "address": {"city": "B"}}, "tags": []})"},
                 {R"({"user":{"address":{"city":"B"}}})", R"({"user":{"name":"A","address":{}}})",
                  R"({"user":{"name":"A"},"tags":[1]})", R"({"tags":[]})", R"({"user":{"name":"A","city":"B"}})"});
}

TEST(JsonSchema, KeysNeedingEscapes) {
  ExpectLanguage(
      R"({"type": "object", "properties": {"a \"q\" \\ b": {"type": "integer"}, "caf\u00e9\n": {"type": "integer"}},
                    "required": ["a \"q\" \\ b", "caf\u00e9\n"]})",
      {"{\"a \\\"q\\\" \\\\ b\":1,\"caf\xC3\xA9\\n\":2}"},
      {"{\"a \\\"q\\\" \\\\ b\":1}", "{\"a q b\":1,\"caf\xC3\xA9\\n\":2}"});
}

TEST(JsonSchema, BareObjectIsAnyObject) {
  ExpectLanguage(R"({"type": "object"})", {"{}", R"({"a":1})", R"({"a":{"b":[1,"x",null,true,{}]},"c":-1.5e3})"},
                 {"[]", R"({"a":})", R"({"a" 1})", "{1:2}", "null"});
  ExpectLanguage(R"({"type": "object", "properties": {}})", {"{}", "{ }"}, {R"({"a":1})"});
  ExpectLanguage(R"({"type": "object", "additionalProperties": false})", {"{}"}, {R"({"a":1})"});
  ExpectLanguage(R"({"type": "object", "required": ["id"]})", {R"({"id":1})", R"({"id":[],"x":2})"},
                 {"{}", R"({"x":2})", R"({"x":2,"id":1})"});
}

TEST(JsonSchema, AdditionalProperties) {
  // true: other keys, with any value, after the declared ones; never a declared key again.
  ExpectLanguage(R"({"type": "object", "properties": {"a": {"type": "integer"}, "ab": {"type": "integer"}},
                    "additionalProperties": true})",
                 {"{}", R"({"a":1})", R"({"x":"y"})", R"({"a":1,"x":[1,{"y":null}]})",
                  R"({"a":1,"ab":2,"b":3,"abc":4})", R"({"":1})", R"({"A":1})", R"({"\u0061":"a"})", R"({"a\n":"s"})"},
                 {R"({"a":"str"})", R"({"x":1,"a":1})", R"({"x":1,"ab":1})", R"({"a":1,"a":1})", R"({"x":1,})"});
  ExpectLanguage(R"({"type": "object", "required": ["n"], "additionalProperties": {"type": "integer"}})",
                 {R"({"n":1})", R"({"n":1,"m":2})"}, {R"({"n":"x"})", R"({"m":2})"});
  ExpectLanguage(R"({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"],
                    "additionalProperties": {"type": "integer"}})",
                 {R"({"a":"s"})", R"({"a":"s","b":2,"c":3})"},
                 {"{}", R"({"a":"s","b":"x"})", R"({"b":2,"a":"s"})", R"({"a":"s","a":1})"});
  // Keys that hold escapes are excluded as written, escape by escape.
  ExpectLanguage(
      R"({"type": "object", "properties": {"q\"\u0001": {"type": "integer"}}, "additionalProperties": true})",
      {R"({"q\"\u0001":1})", R"({"q\"\u0002":"s"})", R"({"q\"":"s"})", R"({"q\n":"s"})", R"({"q\"\u0001x":"s"})"},
      {R"({"q\"\u0001":"s"})"});
}

TEST(JsonSchema, ArraysWithBounds) {
  ExpectLanguage(R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 4})",
                 {"[1,2]", "[1,2,3]", "[1, 2, 3, 4]"},
                 {"[]", "[1]", "[1,2,3,4,5]", "[1,2,]", "[,1,2]", "[1,,2]", "[1 2]", "[1,\"2\"]"});
  ExpectLanguage(R"({"type": "array", "items": {"type": "string"}, "maxItems": 1})", {"[]", R"(["a"])"},
                 {R"(["a","b"])", "[1]"});
  ExpectLanguage(R"({"type": "array", "items": {"type": "boolean"}, "minItems": 1})", {"[true]", "[true,false,true]"},
                 {"[]", "[true,]"});
  ExpectLanguage(R"({"type": "array", "minItems": 3, "maxItems": 3})", {R"([1,"a",null])", "[[],{},[1]]"},
                 {"[1,2]", "[1,2,3,4]"});
  ExpectLanguage(R"({"type": "array", "items": false})", {"[]"}, {"[1]"});
  ExpectLanguage(R"({"type": "array"})", {"[]", R"([1,"a",[{}]])"}, {"[", "[1,]"});
}

TEST(JsonSchema, PrefixItemsAreATuple) {
  ExpectLanguage(R"({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]})",
                 {R"(["a",1])", R"([ "a" , 1 ])"}, {"[]", R"(["a"])", R"(["a",1,2])", R"([1,"a"])"});
  ExpectLanguage(
      R"({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}, "maxItems": 3})",
      {R"(["a"])", R"(["a",1])", R"(["a",1,2])"}, {"[]", R"(["a",1,2,3])", R"(["a","b"])"});
  ExpectLanguage(
      R"({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "integer"}, "minItems": 3})",
      {R"(["a",1,2])", R"(["a",1,2,3,4])"}, {R"(["a"])", R"(["a",1])"});
}

TEST(JsonSchema, EnumsAndConstOfAnyJsonValue) {
  ExpectLanguage(R"({"enum": ["red", 42, 1.5, true, null, {"a": [1, "x"]}, [1, "y"], "say \"hi\"\n", "caf\u00e9"]})",
                 {R"("red")", "42", "1.5", "true", "null", R"({"a":[1,"x"]})", R"([1,"y"])", R"("say \"hi\"\n")",
                  "\"caf\xC3\xA9\""},
                 {R"("blue")", "4", "420", "false", R"({"a": [1, "x"]})", R"("red" )", "[1,\"y\"]]"});
  ExpectLanguage(R"({"type": "string", "enum": ["a", 1, "b"]})", {R"("a")", R"("b")"}, {"1"});
  ExpectLanguage(R"({"enum": ["a", "b"], "nullable": true})", {R"("a")", "null"}, {R"("c")"});
  ExpectLanguage(R"({"const": "fixed"})", {R"("fixed")"}, {R"("other")"});
  ExpectLanguage(R"({"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
                    "required": ["kind", "r"]})",
                 {R"({"kind":"circle","r":2})"}, {R"({"kind":"square","r":2})"});
}

TEST(JsonSchema, AnyOfOneOfTypeListsAndNullable) {
  ExpectLanguage(R"({"anyOf": [{"type": "string", "maxLength": 3}, {"type": "integer"},
                              {"type": "object", "properties": {"k": {"type": "boolean"}}, "required": ["k"]}]})",
                 {R"("abc")", "12", R"({"k":true})"}, {R"("abcd")", "1.5", "{}", "null"});
  ExpectLanguage(R"({"oneOf": [{"type": "boolean"}, {"type": "null"}]})", {"true", "null"}, {"0"});
  ExpectLanguage(R"({"type": ["string", "null"], "maxLength": 2})", {R"("ab")", "null"}, {R"("abc")", "0"});
  ExpectLanguage(R"({"type": ["integer", "number"]})", {"1", "1.5"}, {"\"1\""});
  ExpectLanguage(R"({"type": "integer", "nullable": true})", {"1", "null"}, {"true"});
  ExpectLanguage(R"({"anyOf": [{"type": "integer"}], "nullable": true})", {"1", "null"}, {"true"});
  ExpectLanguage("{}", {"1", "\"s\"", "[]", "{\"a\":null}", "null", "true"}, {"", "nul", "{a:1}"});
  ExpectLanguage("true", {"1", "{}"}, {""});
  ExpectLanguage(R"({"properties": {"a": {"type": "integer"}}, "required": ["a"]})", {R"({"a":1})"}, {"1", "{}"});
  ExpectLanguage(R"({"maxLength": 1})", {R"("a")"}, {"1", R"("ab")"});
}

TEST(JsonSchema, RecursiveTreeThroughDefs) {
  const char* schema = R"({
    "$ref": "#/$defs/node",
    "$defs": {
      "node": {
        "type": "object",
        "properties": {
          "value": {"type": "integer"},
          "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        "required": ["value"]}}})";
  ExpectLanguage(
      schema,
      {R"({"value":1})", R"({"value":1,"children":[]})",
       R"({"value":1,"children":[{"value":2},{"value":3,"children":[{"value":4,"children":[{"value":5}]}]}]})"},
      {R"({"children":[]})", R"({"value":1,"children":[{"value":2},{"children":[]}]})",
       R"({"value":1,"children":[{"value":"x"}]})", R"({"value":1,"children":{"value":2}})"});
}

TEST(JsonSchema, RefsToTheRootAndToDefinitions) {
  ExpectLanguage(
      R"({"type": "object", "properties": {"v": {"type": "integer"}, "next": {"anyOf": [{"$ref": "#"}, {"type": "null"}]}},
                    "required": ["v", "next"]})",
      {R"({"v":1,"next":null})", R"({"v":1,"next":{"v":2,"next":{"v":3,"next":null}}})"},
      {R"({"v":1})", R"({"v":1,"next":{"v":2}})"});
  ExpectLanguage(R"({"definitions": {"a/b": {"type": "integer"}, "t~x": {"type": "string"}},
                    "type": "array", "prefixItems": [{"$ref": "#/definitions/a~1b"}, {"$ref": "#/definitions/t~0x"}]})",
                 {R"([1,"s"])"}, {R"(["s",1])"});
  // Mutual recursion, and a definition used twice: one rule.
  const std::string mutual = R"({"$defs": {
                      "expr": {"anyOf": [{"type": "integer"}, {"$ref": "#/$defs/call"}]},
                      "call": {"type": "object", "properties": {"fn": {"type": "string"},
                               "args": {"type": "array", "items": {"$ref": "#/$defs/expr"}}}, "required": ["fn", "args"]}},
                    "type": "object", "properties": {"a": {"$ref": "#/$defs/expr"}, "b": {"$ref": "#/$defs/expr"}},
                    "required": ["a", "b"]})";
  ExpectLanguage(mutual, {R"({"a":1,"b":{"fn":"f","args":[1,{"fn":"g","args":[]}]}})"},
                 {R"({"a":1,"b":{"fn":"f","args":["x"]}})"});
  const std::string gbnf = Gbnf(mutual);
  EXPECT_NE(gbnf.find("\nexpr ::= "), std::string::npos) << gbnf;
  EXPECT_EQ(gbnf.find("\nexpr-2 ::= "), std::string::npos) << gbnf;
}

TEST(JsonSchema, AllOfMergesObjectSchemas) {
  ExpectLanguage(
      R"({"$defs": {"base": {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}},
                    "allOf": [{"$ref": "#/$defs/base"},
                              {"properties": {"name": {"type": "string"}}, "required": ["name"]}],
                    "properties": {"note": {"type": "string"}}})",
      {R"({"id":1,"name":"a"})", R"({"id":1,"name":"a","note":"n"})"},
      {R"({"id":1})", R"({"name":"a"})", R"({"id":1,"name":"a","other":1})",
       R"({"note":"n","id":1,"name":"a"})"});  // in order of appearance: allOf's members come first
  // A property in two members must satisfy both (here: both objects, merged again).
  ExpectLanguage(R"({"allOf": [{"properties": {"p": {"properties": {"x": {"type": "integer"}}}}},
                               {"properties": {"p": {"properties": {"y": {"type": "integer"}}, "required": ["y"]}}}]})",
                 {R"({"p":{"x":1,"y":2}})", R"({"p":{"y":2}})", "{}"}, {R"({"p":{"x":1}})"});
  EXPECT_EQ(Refusal(R"({"allOf": [{"type": "string"}, {"maxLength": 3}]})"),
            "$.allOf[0]: 'allOf' of non-object schemas is not supported by constrained sampling (type \"string\")");
}

TEST(JsonSchema, UnsupportedKeywordsAreRefusedByNameAndPath) {
  const std::vector<std::pair<std::string, std::string>> keywords = {{"multipleOf", "2"},
                                                                     {"patternProperties", "{}"},
                                                                     {"propertyNames", "{}"},
                                                                     {"minProperties", "1"},
                                                                     {"maxProperties", "1"},
                                                                     {"contains", "{}"},
                                                                     {"minContains", "1"},
                                                                     {"not", "{}"},
                                                                     {"if", "{}"},
                                                                     {"then", "{}"},
                                                                     {"else", "{}"},
                                                                     {"dependentRequired", "{}"},
                                                                     {"dependentSchemas", "{}"},
                                                                     {"unevaluatedProperties", "false"},
                                                                     {"unevaluatedItems", "false"},
                                                                     {"additionalItems", "false"},
                                                                     {"$dynamicRef", "\"#x\""},
                                                                     {"contentEncoding", "\"base64\""},
                                                                     {"x-custom", "1"}};
  for (const auto& [key, value] : keywords) {
    const std::string schema =
        R"({"type": "object", "properties": {"age": {"type": "array", "items": {")" + key + "\": " + value + "}}}}";
    EXPECT_EQ(Refusal(schema), "$.properties.age.items: '" + key + "' is not supported by constrained sampling")
        << schema;
  }
  // What a grammar cannot hold, said so.
  EXPECT_EQ(Refusal(R"({"type": "object", "properties": {"age": {"type": "number", "minimum": 0}}})"),
            "$.properties.age: 'minimum' on a number cannot be enforced by a grammar (it can for \"type\": "
            "\"integer\"); drop it, or make the value an integer");
  EXPECT_EQ(Refusal(R"({"anyOf": [{"type": "string"}, {"type": "string", "format": "hostname"}]})"),
            "$.anyOf[1]: 'format' \"hostname\" is not one constrained sampling writes (date, time, date-time, "
            "uuid, email)");
  EXPECT_EQ(Refusal(R"({"type": "array", "uniqueItems": true})"),
            "$: 'uniqueItems': true cannot be enforced by a grammar (it would have to remember every item); drop "
            "it, or list the values with 'enum' items");
  EXPECT_EQ(Refusal(R"({"type": "string", "pattern": "a", "maxLength": 3})"),
            "$: 'pattern' beside 'maxLength' is not supported by constrained sampling");
  EXPECT_EQ(Refusal(R"({"type": "integer", "minimum": 5, "maximum": 4})"),
            "$: no integer is within its minimum and maximum");
  EXPECT_EQ(Refusal(R"({"type": "integer", "minimum": 1e17})"),
            "$: 'minimum' 1e+17 is past the 16 digits an integer may have here");
  for (const auto& [pattern, message] : std::vector<std::pair<std::string, std::string>>{
           {"(a", "'pattern' at offset 2: a '(' without its ')'"},
           {"a)", "'pattern' at offset 1: an unmatched ')'"},
           {"[ab", "'pattern' at offset 3: a '[' without its ']'"},
           {"(?=a)", "'pattern' at offset 1: lookarounds and named groups ('(?') cannot be written as a grammar"},
           {"(a)\\1", "'pattern' at offset 4: backreferences cannot be written as a grammar"},
           {"\\bword", "'pattern' at offset 1: '\\b' (a word boundary) cannot be written as a grammar"},
           {"a^b", "'pattern' at offset 1: '^' inside the pattern (only a leading one, the anchor, is supported)"},
           {"a$b", "'pattern' at offset 1: '$' inside the pattern (only a final one, the anchor, is supported)"},
           {"*a", "'pattern' at offset 0: '*' with nothing before it to repeat"},
           {"a**", "'pattern' at offset 2: a quantifier after a quantifier"},
           {"a{2000}", "'pattern' at offset 7: a count past 1000"},
           {"a{3,2}", "'pattern' at offset 6: a count {n,m} with m < n"},
           {"[z-a]", "'pattern' at offset 4: a range out of order"},
           {"\\p{L}", "'pattern' at offset 1: Unicode property classes ('\\p{...}') are not supported"},
           {"\\q", "'pattern' at offset 1: the escape '\\q' is not one ECMAScript defines"},
           {std::string(70, '(') + std::string(70, ')'), "'pattern' at offset 65: groups nest deeper than 64"},
       }) {
    EXPECT_EQ(Refusal(R"({"type": "string", "pattern": )" + ojson(pattern).dump() + "}"), "$: " + message) << pattern;
  }
}

// minimum/maximum (and the exclusive forms, draft 4's booleans too) on an
// integer: exactly the integers in the range, checked one by one around
// every bound, across digit counts and signs.
TEST(JsonSchema, IntegerBounds) {
  std::mt19937_64 rng(11);
  std::vector<std::pair<int64_t, int64_t>> ranges = {{0, 0},     {0, 9},       {1, 10},    {-5, 5},   {-120, -7},
                                                     {7, 1234},  {99, 100},    {-1, 0},    {250, 255}, {-1000, 999},
                                                     {10, 19},   {123, 4567}, {-99999, -1}, {0, 100000}};
  for (int k = 0; k < 20; ++k) {
    const int64_t a = static_cast<int64_t>(rng() % 200001) - 100000, b = static_cast<int64_t>(rng() % 200001) - 100000;
    ranges.push_back({std::min(a, b), std::max(a, b)});
  }
  for (const auto& [lo, hi] : ranges) {
    const std::string schema =
        R"({"type": "integer", "minimum": )" + std::to_string(lo) + R"(, "maximum": )" + std::to_string(hi) + "}";
    auto g = MustParse(Gbnf(schema));
    ASSERT_NE(g, nullptr) << schema;
    std::vector<int64_t> probes = {lo - 11, lo - 1, lo, lo + 1, hi - 1, hi, hi + 1, hi + 11, 0, -1, 1};
    for (int k = 0; k < 40; ++k) probes.push_back(lo + static_cast<int64_t>(rng() % static_cast<uint64_t>(hi - lo + 1)));
    if (hi - lo <= 2000)
      for (int64_t v = lo - 3; v <= hi + 3; ++v) probes.push_back(v);
    for (int64_t v : probes)
      EXPECT_EQ(Matches(g, std::to_string(v)), v >= lo && v <= hi) << v << " in " << schema;
    EXPECT_FALSE(Matches(g, "-0")) << schema;
    EXPECT_FALSE(Matches(g, "0" + std::to_string(std::max<int64_t>(hi, 1)))) << schema;  // no leading zeros
  }
  ExpectLanguage(R"({"type": "integer", "exclusiveMinimum": 0, "exclusiveMaximum": 10})", {"1", "9"}, {"0", "10", "-1"});
  ExpectLanguage(R"({"type": "integer", "minimum": 0, "exclusiveMinimum": true, "maximum": 3.5})", {"1", "3"},
                 {"0", "4"});
  ExpectLanguage(R"({"type": "integer", "minimum": -2.5})", {"-2", "0", "9999999999999999"}, {"-3", "10000000000000000"});
  ExpectLanguage(R"({"type": ["integer", "null"], "maximum": -3})", {"-3", "-9999999999999999", "null"}, {"-2", "0"});
}

TEST(JsonSchema, StringFormats) {
  ExpectLanguage(R"({"type": "string", "format": "date"})", {R"("2026-12-05")", R"("0001-01-31")"},
                 {R"("2026-13-01")", R"("2026-00-10")", R"("2026-1-05")", R"("2026-12-32")", R"("x")"});
  ExpectLanguage(R"({"type": "string", "format": "time"})", {R"("23:59:59Z")", R"("08:00:00.123+02:00")"},
                 {R"("24:00:00Z")", R"("08:00:00")", R"("8:00:00Z")"});
  ExpectLanguage(R"({"format": "date-time"})", {R"("2026-12-05T10:20:30Z")", R"("2026-12-05T10:20:30.5-05:30")"},
                 {R"("2026-12-05 10:20:30Z")", R"("2026-12-05")"});
  ExpectLanguage(R"({"type": "string", "format": "uuid"})", {R"("123e4567-e89b-12d3-a456-426614174000")"},
                 {R"("123e4567e89b12d3a456426614174000")", R"("123e4567-e89b-12d3-a456-42661417400g")"});
  ExpectLanguage(R"({"type": "string", "format": "email"})",
                 {R"("a.b+c@example.com")", R"("x_y@mail.co.uk")", R"("o'neil@a-b.org")"},
                 {R"("@example.com")", R"("a@b")", R"("a@.com")", R"("a b@c.org")", R"("a..b@c.org")"});
}

// pattern: an ECMAScript regular expression; unanchored ends match anything.
std::string PatternSchema(const std::string& regex) {
  return R"({"type": "string", "pattern": )" + ojson(regex).dump() + "}";
}

TEST(JsonSchema, Patterns) {
  ExpectLanguage(PatternSchema(R"(^[A-Z]{2}-\d{3,4}$)"), {R"("AB-123")", R"("ZZ-0000")"},
                 {R"("AB-12")", R"("ab-123")", R"("AB-12345")", R"("xAB-123")"});
  ExpectLanguage(R"({"pattern": "^(cat|dog)s?$"})", {R"("cat")", R"("dogs")"}, {R"("cats!")", R"("bird")", R"("")"});
  ExpectLanguage(PatternSchema("abc"), {R"("abc")", R"("xxabcyy")", R"("a\"abc\n")"}, {R"("ab")", R"("acb")"});
  ExpectLanguage(PatternSchema(R"(^[^"\\]*$)"), {R"("plain text")", R"("tab\tok")"}, {R"("a\"b")", R"("a\\b")"});
  ExpectLanguage(PatternSchema("^a.c$"), {R"("abc")", R"("a\"c")", R"("aéc")"}, {R"("a\nc")", R"("ac")"});
  ExpectLanguage(PatternSchema(R"(^\w+@\s?[\d.]+$)"), {R"("x_1@ 1.5")", R"("ab@\t3")"}, {R"("x-1@1")", R"("@1")"});
  ExpectLanguage(PatternSchema("^(?:ab){2}|x{2,}?$"), {R"("abab")", R"("xxx")"}, {R"("ab")", R"("x")"});
  ExpectLanguage(PatternSchema(R"(^\u00e9\x41[\b]?{$)"), {R"("éA{")", R"("éA\b{")"}, {R"("eA{")"});
  ExpectLanguage(PatternSchema(R"(^"\\$)"), {R"("\"\\")"}, {R"("\"")"});
  ExpectLanguage(PatternSchema(R"(^\$\d+(\.\d{2})?$)"), {R"("$5")", R"("$12.50")"}, {R"("$5.5")", R"("5")"});
}

TEST(JsonSchema, ContradictionsBadValuesAndLimitsAreRefused) {
  auto refused = [](std::string_view schema, std::string_view expected) {
    const std::string message = Refusal(schema);
    EXPECT_NE(message.find(expected), std::string::npos) << schema << "\n" << message;
  };
  refused(R"({"type": "string", "minLength": 5, "maxLength": 2})", "$: 'maxLength' (2) is less than 'minLength' (5)");
  refused(R"({"type": "array", "minItems": 5, "maxItems": 2})", "$: 'maxItems' (2) is less than 'minItems' (5)");
  refused(R"({"type": "string", "maxLength": 20000})",
          "$: 'maxLength' is 20000; constrained sampling supports at most 10000");
  refused(R"({"type": "array", "minItems": -1})", "$: 'minItems' must be a non-negative integer, found -1");
  refused(R"({"type": "array", "minItems": 1.5})", "'minItems' must be a non-negative integer");
  refused(R"({"properties": {"a": false}})", "$.properties.a: the schema 'false' accepts no value");
  refused("false", "$: the schema 'false' accepts no value");
  refused(R"({"properties": {"a": 5}})", "$.properties.a: a schema must be an object or a boolean, found number");
  refused(R"({"type": "object", "required": "a"})", "$: 'required' must be an array of property names");
  refused(R"({"type": "object", "properties": {"a": {}}, "required": ["b"]})",
          "$: required property \"b\" is not in 'properties' and additionalProperties is false");
  refused(R"({"type": "strin"})", "$: unknown type \"strin\"");
  refused(R"({"type": []})", "'type' must be a type name");
  refused(R"({"properties": []})", "$: 'properties' must be an object");
  refused(R"({"items": [{"type": "string"}]})", "'items' as a list");
  refused(R"({"enum": []})", "'enum' must be a non-empty array");
  refused(R"({"anyOf": {}})", "'anyOf' must be a non-empty array");
  refused(R"({"nullable": "yes"})", "'nullable' must be a boolean");
  refused(R"({"type": "integer", "enum": ["a"]})", "no value of 'enum' or 'const' has the schema's 'type'");
  refused(R"({"enum": ["a"], "const": "b"})", "'const' is not one of 'enum'");
  refused(R"({"type": "array", "prefixItems": [{}, {}], "maxItems": 1})",
          "'maxItems' is less than the number of 'prefixItems'");
  refused(R"({"type": "array", "prefixItems": [{}], "minItems": 2})", "'minItems' asks for more items");
  refused(R"({"type": "object", "anyOf": [{"required": ["a"]}]})", "$: 'anyOf' beside 'type' is not supported");
  refused(R"({"$ref": "#/$defs/a", "maxLength": 3, "$defs": {"a": {}}})",
          "$: '$ref' beside 'maxLength' is not supported");
  refused(R"({"$ref": "http://example.com/s.json"})", "'$ref' \"http://example.com/s.json\" is not supported");
  refused(R"({"$ref": "#/properties/a"})", "'$ref' \"#/properties/a\" is not supported");
  refused(R"({"$ref": "#/$defs/missing"})", "'$ref' \"#/$defs/missing\" names no definition");
  refused(R"({"$ref": "#"})", "refers to itself before any object or array");
  refused(R"({"$defs": {"a": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/b"}]}, "b": {"$ref": "#/$defs/a"}},
             "$ref": "#/$defs/a"})",
          "$.$defs.b: '$ref' \"#/$defs/a\" refers to itself before any object or array");
  std::string deep = R"({"type": "string"})";
  for (int i = 0; i < 70; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  refused(deep, "nests deeper than 64 levels");
  deep = R"({"type": "string"})";
  for (int i = 0; i < 60; ++i) deep = R"({"type": "array", "items": )" + deep + "}";
  EXPECT_TRUE(Matches(Gbnf(deep), std::string(60, '[') + "\"s\"" + std::string(60, ']')));
}

TEST(JsonSchema, EveryGrammarParses) {
  std::string deep = R"({"type": "integer"})";
  for (int i = 0; i < 64; ++i) deep = R"({"type": "object", "properties": {"k": )" + deep + R"(}, "required": ["k"]})";
  const std::string long_key(100, 'k');
  for (
      const std::string& schema : std::vector<std::string>{
          deep, R"({"type": "string", "maxLength": 10000})", R"({"type": "string", "minLength": 10000})",
          R"({"type": "string", "minLength": 9999, "maxLength": 10000})",
          R"({"type": "array", "items": {"type": "integer"}, "minItems": 10000})",
          R"({"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "integer"}, "maxItems": 10000})",
          R"({"type": "object", "properties": {")" + long_key +
              R"(": {"type": "integer"}}, "additionalProperties": true})",
          R"({"type": "object", "properties": {"a": {}, "b": {}, "c": {}, "d": {}, "e": {}, "f": {}}, "additionalProperties": {}})",
          R"({"anyOf": [{"type": "object"}, {"type": "array"}, {"enum": [[], {}]}, {"type": ["boolean", "null"]}]})"}) {
    auto gbnf = JsonSchemaToGbnf(ojson::parse(schema));
    ASSERT_TRUE(gbnf.ok()) << gbnf.status().message() << "\n" << schema;
    auto g = Grammar::Parse(*gbnf);
    EXPECT_TRUE(g.ok()) << g.status().message() << "\n" << schema;
  }
  // A long key is excluded from the additional ones whole (its trie is cut into rules).
  auto g = MustParse(Gbnf(R"({"type": "object", "properties": {")" + long_key +
                          R"(": {"type": "integer"}}, "additionalProperties": true})"));
  EXPECT_TRUE(Matches(g, "{\"" + long_key + "\":1}"));
  EXPECT_FALSE(Matches(g, "{\"" + long_key + "\":\"s\"}"));
  EXPECT_TRUE(Matches(g, "{\"" + long_key + "k\":\"s\"}"));
  EXPECT_TRUE(Matches(g, "{\"" + long_key.substr(1) + "\":\"s\"}"));
  EXPECT_TRUE(Matches(g, "{\"" + long_key.substr(1) + "x\":\"s\"}"));
}

TEST(JsonSchema, AnnotationsAreIgnored) {
  ExpectLanguage(R"({"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "x", "title": "T",
                    "description": "D", "$comment": "c", "type": "object",
                    "properties": {"a": {"type": "integer", "default": 1, "examples": [1], "deprecated": true,
                                         "readOnly": true, "writeOnly": false}},
                    "required": ["a"]})",
                 {R"({"a":1})"}, {"{}"});
}

TEST(JsonSchema, RuleNamesAreSanitizedAndUnique) {
  const std::string gbnf = Gbnf(R"({"type": "object", "properties": {
      "my_prop!": {"type": "object", "properties": {"x": {"type": "string", "maxLength": 1}}},
      "my prop": {"type": "object", "properties": {"x": {"type": "string", "maxLength": 2}}},
      "root": {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}}})");
  EXPECT_NE(gbnf.find("\nmy-prop ::= "), std::string::npos) << gbnf;
  EXPECT_NE(gbnf.find("\nmy-prop-2 ::= "), std::string::npos) << gbnf;
  EXPECT_NE(gbnf.find("\nx ::= "), std::string::npos) << gbnf;
  EXPECT_NE(gbnf.find("\nx-2 ::= "), std::string::npos) << gbnf;
  EXPECT_NE(gbnf.find("\nroot-2 ::= "), std::string::npos) << gbnf;
  EXPECT_EQ(gbnf.find("\nroot ::= "), std::string::npos) << gbnf;
  EXPECT_EQ(gbnf.rfind("root ::= ", 0), 0u) << gbnf;
  MustParse(gbnf);
}

TEST(JsonSchema, BuilderSharesRulesAndResolvesRefsAgainstTheFirstSchema) {
  GbnfBuilder b;
  const ojson defs = ojson::parse(R"({"$defs": {"id": {"type": "integer"}}, "type": "string"})");
  auto first = b.AddSchema(defs, "first");
  ASSERT_TRUE(first.ok()) << first.status().message();
  auto second = b.AddSchema(ojson::parse(R"({"type": "array", "items": {"$ref": "#/$defs/id"}})"), "second");
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_EQ(b.Ws(), b.Ws());
  const std::string call = b.AddRule("call", GbnfLiteral("<") + " " + *first + " " + *second + " " + GbnfLiteral(">"));
  const std::string gbnf = b.Text(call);
  EXPECT_EQ(gbnf.find("ws-2"), std::string::npos) << gbnf;
  EXPECT_TRUE(Matches(gbnf, R"(<"a"[1, 2]>)")) << gbnf;
  EXPECT_FALSE(Matches(gbnf, R"(<"a"["1"]>)")) << gbnf;
}

TEST(JsonSchema, ARefusedSchemaLeavesTheBuilderAsItWas) {
  GbnfBuilder b;
  auto bad = b.AddSchema(ojson::parse(R"({"$defs": {"n": {"type": "object", "properties": {"x": {"$ref": "#/$defs/n"},
                                           "y": {"type": "integer", "multipleOf": 2}}}}, "$ref": "#/$defs/n"})"),
                         "bad");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(b.Text("\"x\""), "root ::= \"x\"\n");
  // The next schema is the root for $ref now.
  auto good = b.AddSchema(ojson::parse(R"({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n"})"), "good");
  ASSERT_TRUE(good.ok()) << good.status().message();
  EXPECT_TRUE(Matches(b.Text(*good), "12"));
}

TEST(JsonSchema, JsonObjectGrammar) {
  const std::string gbnf = JsonObjectGbnf();
  EXPECT_EQ(gbnf.rfind("root ::= object\n", 0), 0u) << gbnf;
  auto g = MustParse(gbnf);
  for (std::string_view ok :
       {"{}", R"({"a":1})", R"({"a": [1, 2.5e-3, "x", null, true, false, {"b": {}}], "c": "\u00e9"})",
        "{\n  \"k\": -0\n}"})
    EXPECT_TRUE(Matches(g, ok)) << ok;
  for (std::string_view bad : {"[]", "1", "\"s\"", "{", R"({"a":1,})", R"({"a"})", "{'a':1}", R"({"a":01})", "{} "})
    EXPECT_FALSE(Matches(g, bad)) << bad;
}

TEST(JsonSchema, GbnfLiteralEscapes) {
  EXPECT_EQ(GbnfLiteral("ab"), R"("ab")");
  EXPECT_EQ(GbnfLiteral("a\"b\\c"), R"("a\"b\\c")");
  EXPECT_EQ(GbnfLiteral(std::string("\n\t\x01\x7F", 4)), R"("\x0A\x09\x01\x7F")");
  EXPECT_EQ(GbnfLiteral(std::string_view("\0", 1)), R"("\x00")");
  EXPECT_EQ(GbnfLiteral("caf\xC3\xA9"), "\"caf\xC3\xA9\"");
  for (std::string_view s : {"ab", "a\"b\\c", "\n\t\x01\x7F", "caf\xC3\xA9 \xF0\x9F\x8E\x89"})
    EXPECT_TRUE(Matches("root ::= " + GbnfLiteral(s) + "\n", s)) << GbnfLiteral(s);
}

// Texts walked at random through the grammar, byte by byte (any byte the
// matcher takes, ending when it may): each is JSON that the check accepts.
// `preferred` bytes are taken more often than others.
void ExpectWalksValid(std::string_view schema, const std::function<bool(const ojson&)>& valid, int walks = 300,
                      std::string_view preferred_bytes = "{}[],:\"0123456789-.etrufalsn ") {
  auto g = MustParse(Gbnf(schema));
  ASSERT_NE(g, nullptr);
  std::mt19937 rng(12345);
  int finished = 0;
  for (int w = 0; w < walks; ++w) {
    Matcher m(g);
    std::string text;
    bool ended = false;
    while (text.size() < 3000) {
      if (m.CanEnd() && (rng() % 4 == 0 || m.MustEnd())) {
        ended = true;
        break;
      }
      // Bytes in random order, the preferred ones first (most of the times):
      // the first the matcher takes (a refused byte leaves it as it was).
      std::vector<char> order(256);
      for (int b = 0; b < 256; ++b) order[static_cast<size_t>(b)] = static_cast<char>(b);
      std::shuffle(order.begin(), order.end(), rng);
      if (rng() % 4 != 0)
        std::stable_partition(order.begin(), order.end(),
                              [&](char c) { return preferred_bytes.find(c) != std::string_view::npos; });
      auto taken = std::find_if(order.begin(), order.end(), [&](char c) { return m.Accept(std::string_view(&c, 1)); });
      ASSERT_NE(taken, order.end()) << "stuck after: " << text;
      const char c = *taken;
      text += c;
    }
    if (!ended) continue;
    ++finished;
    const ojson j = ojson::parse(text, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "not JSON: " << text;
    EXPECT_TRUE(valid(j)) << "not of the schema: " << text;
  }
  EXPECT_GT(finished, walks / 2);
}

TEST(JsonSchema, RandomWalksAreValidInstances) {
  ExpectWalksValid(R"({"type": "object", "properties": {
                        "a": {"type": "integer"}, "b": {"type": "string", "maxLength": 3},
                        "c": {"type": "array", "items": {"type": "boolean"}, "minItems": 1, "maxItems": 2},
                        "d": {"enum": ["x", 1, null]}},
                      "required": ["b", "c"], "additionalProperties": {"type": "null"}})",
                   [](const ojson& j) {
                     if (!j.is_object() || !j.contains("b") || !j.contains("c")) return false;
                     for (auto it = j.begin(); it != j.end(); ++it) {
                       const ojson& v = it.value();
                       if (it.key() == "a") {
                         if (!v.is_number_integer()) return false;
                       } else if (it.key() == "b") {
                         if (!v.is_string() || v.get<std::string>().size() > 12) return false;
                       } else if (it.key() == "c") {
                         if (!v.is_array() || v.empty() || v.size() > 2) return false;
                         for (const ojson& e : v)
                           if (!e.is_boolean()) return false;
                       } else if (it.key() == "d") {
                         if (v != "x" && v != 1 && !v.is_null()) return false;
                       } else if (!v.is_null()) {
                         return false;
                       }
                     }
                     return true;
                   });
  std::function<bool(const ojson&)> node = [&](const ojson& j) {
    if (!j.is_object() || !j.contains("value") || !j["value"].is_number_integer()) return false;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (it.key() == "value") continue;
      if (it.key() != "children" || !it.value().is_array()) return false;
      for (const ojson& c : it.value())
        if (!node(c)) return false;
    }
    return true;
  };
  ExpectWalksValid(R"({"$ref": "#/$defs/node", "$defs": {"node": {"type": "object", "properties": {
                        "value": {"type": "integer"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
                        "required": ["value"]}}})",
                   node);
  ExpectWalksValid(R"({"type": "object"})", [](const ojson& j) { return j.is_object(); });
  // Escapes, \u surrogate pairs and raw UTF-8 come out as strings strict parsers read.
  ExpectWalksValid(R"({"type": "string", "maxLength": 6})",
                   [](const ojson& j) {
                     if (!j.is_string()) return false;
                     size_t n = 0;
                     for (char c : j.get<std::string>()) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
                     return n <= 6;
                   },
                   1000, "\\\"u0123456789abcdefABCDEFnt\xC3\xA9\xF0\x9F");
}

}  // namespace
}  // namespace strata::grammar
