#pragma once
// The Jinja interpreter's filters (internal to runtime/chat/jinja*.cc): a
// table from each filter's name to its function. A filter reaches the
// renderer only through FilterHost: the step budget, the output bound, for
// loop items, attribute paths, tests and comparisons.

#include <cstddef>
#include <string>
#include <vector>

#include "runtime/chat/jinja_value.h"

namespace strata::jinja {

class FilterHost {
 public:
  virtual ~FilterHost() = default;
  virtual void Step(int line) = 0;                         // counts against Limits::max_steps
  virtual size_t max_output() const = 0;                   // Limits::max_output: the bound of a built string
  virtual std::vector<Value> Items(const Value& v, int line) const = 0;  // what a for loop walks
  virtual Value Path(const Value& v, const std::string& path, int line) = 0;  // attribute "a.b"
  virtual bool ApplyTest(const std::string& name, const Value& v, Args& a) = 0;
  virtual bool Compare(const std::string& op, const Value& a, const Value& b, int line) = 0;
};

// `v | name(a...)`. Throws Error for an unknown filter or a bad argument.
Value ApplyFilter(FilterHost& host, const std::string& name, const Value& v, Args& a);

}  // namespace strata::jinja
