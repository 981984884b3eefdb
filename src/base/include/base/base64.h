// Standard base64 (RFC 4648 section 4, with `=` padding): kubeconfigs' *-data fields and HTTP
// basic authentication.
//
// Thread-safety: pure functions.
#ifndef MODELMETRICS_BASE_BASE64_H_
#define MODELMETRICS_BASE_BASE64_H_

#include <string>
#include <string_view>

namespace modelmetrics::base {

std::string EncodeBase64(std::string_view bytes);

// Decodes `text` into *out; whitespace is ignored and padding is optional. False (with *out
// undefined) when `text` is not base64.
bool DecodeBase64(std::string_view text, std::string* out);

}  // namespace modelmetrics::base

#endif  // MODELMETRICS_BASE_BASE64_H_
