// Text that came from outside the process (a Pod's body, a store's answer, an API server's
// message) made fit to leave it again: valid UTF-8 and of bounded length.
//
// Every text a snapshot, a page or a log line carries passes through here once, where it is
// made (deployment/reason.h does it for every missing[] reason), so writers downstream never
// meet a byte they cannot encode: one bad byte from one Pod cannot fail a whole answer.
//
// Thread-safety: pure functions.
#ifndef MODELMETRICS_BASE_TEXT_H_
#define MODELMETRICS_BASE_TEXT_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace modelmetrics::base {

// The length of the valid UTF-8 sequence at the front of `text` (1-4), or 0 when there is none:
// Go's utf8.DecodeRuneInString rules (no overlongs, no surrogates, nothing past U+10FFFF).
size_t Utf8SequenceLength(std::string_view text);

// Whether all of `text` is valid UTF-8 (by Utf8SequenceLength's rules).
bool IsValidUtf8(std::string_view text);

// `text` with each byte that does not start a valid UTF-8 sequence replaced by U+FFFD, as Go's
// strings.ToValidUTF8 does per byte (and encoding/json when it writes a string).
std::string ValidUtf8(std::string_view text);

// ValidUtf8(text), cut to at most `max_bytes` (on a character boundary) plus a marker that says
// how much was cut: "... [cut 2097152 bytes]". Texts within the bound come back whole.
std::string Excerpt(std::string_view text, size_t max_bytes);

// Percent-encodes everything but RFC 3986 unreserved characters (A-Z a-z 0-9 - . _ ~): safe for
// a path segment and for a query value alike.
std::string PercentEncode(std::string_view text);

// RFC 3986 percent-decoding of one path segment or query value (`%2F` -> `/`; `+` stays `+`).
// False when a `%` is not followed by two hex digits.
bool PercentDecode(std::string_view text, std::string* out);

// `text` with ASCII upper-case letters lowered (header names, media types, extra keys).
std::string AsciiLower(std::string_view text);

// `a` and `b` are equal but for ASCII letter case (engine names, role kinds, header names).
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// The values of query parameter `name` in `query` (the target after '?'), in order, each
// percent-decoded with `+` as a space (HTML form encoding, as Go's url.ParseQuery reads it). A
// bare `name` (no `=`) gives "". Parameters that do not decode are skipped.
std::vector<std::string> QueryValues(std::string_view query, std::string_view name);
// QueryValues(query, name) is not empty.
bool HasQueryParameter(std::string_view query, std::string_view name);

}  // namespace modelmetrics::base

#endif  // MODELMETRICS_BASE_TEXT_H_
