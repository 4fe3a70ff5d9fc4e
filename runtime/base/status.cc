#include "runtime/base/status.h"

#include <cinttypes>
#include <cstdio>

namespace strata {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kDataLoss: return "corrupt input";
    case StatusCode::kNotFound: return "not found";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kIoError: return "I/O error";
    case StatusCode::kResourceExhausted: return "out of resources";
    case StatusCode::kFailedPrecondition: return "refused";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string s(StatusCodeName(code_));
  s += ": ";
  s += message_;
  return s;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string m(context);
  m += ": ";
  m += message_;
  return Status(code_, std::move(m));
}

Status CorruptAt(std::string_view file, uint64_t offset, std::string_view field,
                 std::string_view expected, std::string_view found) {
  char where[64];
  std::snprintf(where, sizeof where, "byte %" PRIu64 " (0x%" PRIx64 ")", offset, offset);
  std::string m;
  m.reserve(file.size() + field.size() + expected.size() + found.size() + 64);
  m.append(file).append(": ").append(where).append(": ").append(field);
  m.append(": expected ").append(expected).append(", found ").append(found);
  return Status(StatusCode::kDataLoss, std::move(m));
}

}  // namespace strata
