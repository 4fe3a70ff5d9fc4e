#pragma once
// ApiError: an HTTP error in the OpenAI error shape,
//   {"error": {"message": "...", "type": "invalid_request_error", "param": "max_tokens", "code": "..."}}
// The message names the problem in the user's words; `param` names the
// request field at fault (or is null); `code` is a short stable identifier.

#include <string>

#include <nlohmann/json.hpp>

namespace strata::serve {

struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";
  std::string code;     // empty: null
  std::string message;
  std::string param;    // empty: null

  nlohmann::ordered_json ToJson() const;
  std::string Body() const;  // ToJson() serialized
};

// The common ones.
ApiError BadRequest(std::string message, std::string param = "", std::string code = "invalid_request");
ApiError Unauthorized();
ApiError NotFoundError(std::string message);
ApiError PayloadTooLarge(size_t limit);
ApiError Busy(std::string message);           // 503, "server_busy"
ApiError Loading();                           // 503, "model_loading"
ApiError DeviceLost(std::string message);     // 503, "device_lost": the server is stopping
ApiError ServerError(std::string message);    // 500

// JSON text for the wire (keys in the order built: "id" first, as OpenAI's):
// never throws, ill-formed UTF-8 becomes U+FFFD.
std::string Dump(const nlohmann::ordered_json& j);

}  // namespace strata::serve
