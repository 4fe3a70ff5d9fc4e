#include "runtime/serve/api_error.h"

#include "runtime/base/strings.h"

namespace strata::serve {

nlohmann::ordered_json ApiError::ToJson() const {
  nlohmann::ordered_json e = {{"message", message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (!param.empty()) e["param"] = param;
  if (!code.empty()) e["code"] = code;
  return {{"error", e}};
}

std::string ApiError::Body() const { return Dump(ToJson()); }

ApiError BadRequest(std::string message, std::string param, std::string code) {
  return {400, "invalid_request_error", std::move(code), std::move(message), std::move(param)};
}

ApiError Unauthorized() {
  return {401, "authentication_error", "invalid_api_key",
          "missing or invalid API key: send it as 'Authorization: Bearer KEY' (or 'X-Api-Key: KEY')", ""};
}

ApiError NotFoundError(std::string message) { return {404, "not_found_error", "not_found", std::move(message), ""}; }

ApiError PayloadTooLarge(size_t limit) {
  return {413, "invalid_request_error", "payload_too_large",
          StrFormat("the request body is larger than this server accepts (%zu bytes; --max-body)", limit), ""};
}

ApiError Busy(std::string message) { return {503, "unavailable_error", "server_busy", std::move(message), ""}; }

ApiError Loading() { return {503, "unavailable_error", "model_loading", "Loading model", ""}; }

ApiError DeviceLost(std::string message) {
  return {503, "unavailable_error", "device_lost", std::move(message), ""};
}

ApiError ServerError(std::string message) { return {500, "server_error", "internal_error", std::move(message), ""}; }

std::string Dump(const nlohmann::ordered_json& j) {
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace strata::serve
