#include "runtime/serve/web_page.h"

#include "strata/chat_page_html.h"  // generated from runtime/serve/web/index.html

namespace strata::serve {

const std::string_view kChatPageHtml = kGeneratedChatPageHtml;

}  // namespace strata::serve
