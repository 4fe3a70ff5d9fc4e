#pragma once
// The chat page served at / : one self-contained HTML file
// (runtime/serve/web/index.html, inline CSS and JS, no external assets, no
// build step), compiled into the binary by CMake.

#include <string_view>

namespace strata::serve {

extern const std::string_view kChatPageHtml;

}  // namespace strata::serve
