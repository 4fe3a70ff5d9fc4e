#pragma once
// Status and Result<T>: errors cross module boundaries as values, never as
// exceptions. A Status message always says what went wrong, where (file,
// tensor, byte offset) and, for bad input, what was expected and what was found.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace strata {

enum class StatusCode : uint8_t {
  kOk = 0,
  kInvalidArgument,     // the caller (user, CLI option, request) asked for something invalid
  kDataLoss,            // input bytes are corrupt, truncated or malformed
  kNotFound,            // a file, key or tensor that must exist does not
  kUnsupported,         // well-formed, but this build cannot handle it
  kIoError,             // the OS refused (open, read, write, map, rename)
  kResourceExhausted,   // an allocation, mapping or budget failed
  kFailedPrecondition,  // state does not allow the operation (e.g. a fix needs a flag)
  kInternal,            // a bug in Strata
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "data loss: <message>"
  std::string ToString() const;
  // Returns this status with "<context>: " prepended to the message.
  Status WithContext(std::string_view context) const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status DataLoss(std::string m) { return {StatusCode::kDataLoss, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status Unsupported(std::string m) { return {StatusCode::kUnsupported, std::move(m)}; }
inline Status IoError(std::string m) { return {StatusCode::kIoError, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status FailedPrecondition(std::string m) { return {StatusCode::kFailedPrecondition, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }

// A defect in input bytes, in the one format every Strata tool prints:
//   "<file>: byte <offset> (0x<hex>): <field>: expected <expected>, found <found>"
Status CorruptAt(std::string_view file, uint64_t offset, std::string_view field,
                 std::string_view expected, std::string_view found);

// Result<T>: a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    if (std::get<Status>(v_).ok()) v_ = Status(StatusCode::kInternal, "Result built from an OK status");
  }
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOkStatus;
    return ok() ? kOkStatus : std::get<Status>(v_);
  }
  // REQUIRES: ok()
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace strata

#define STRATA_CONCAT_INNER_(a, b) a##b
#define STRATA_CONCAT_(a, b) STRATA_CONCAT_INNER_(a, b)

#define STRATA_RETURN_IF_ERROR(expr)              \
  do {                                            \
    ::strata::Status strata_status_ = (expr);     \
    if (!strata_status_.ok()) return strata_status_; \
  } while (0)

#define STRATA_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()

#define STRATA_ASSIGN_OR_RETURN(lhs, expr) \
  STRATA_ASSIGN_OR_RETURN_IMPL_(STRATA_CONCAT_(strata_result_, __LINE__), lhs, expr)
