// Locale-free number parsing and formatting for the exposition formats.
//
// ParseValue accepts what Prometheus accepts for a sample value: Go ParseFloat's decimal syntax
// (`1`, `-1.5`, `.5`, `5.`, `1e+010`) plus `NaN`, `Inf`, `Infinity` in any case with an optional
// sign on the infinities, and rejects hex floats, `_` digit separators, empty input and trailing
// bytes. Overflow (`1e999`) is an error; underflow rounds to a signed zero, as Go does.
//
// Thread-safety: pure functions.
#ifndef MODELMETRICS_FORMAT_NUMBER_H_
#define MODELMETRICS_FORMAT_NUMBER_H_

#include <cstdint>
#include <string>
#include <string_view>

namespace modelmetrics::format {

// Parses a sample value; false when `text` is not one.
bool ParseValue(std::string_view text, double* value);

// Parses a text-format timestamp: an optional `-` and decimal digits, fitting int64
// (milliseconds). `allow_negative` false accepts digits only, as Prometheus's lexer does.
bool ParseTimestampMs(std::string_view text, bool allow_negative, int64_t* ms);

// Parses an OpenMetrics timestamp (float seconds, no NaN/Inf) into milliseconds, rounded to the
// nearest millisecond; exact for up to three fractional digits.
bool ParseSecondsAsMs(std::string_view text, int64_t* ms);

// Appends `ms` as exact decimal seconds (`1700000000.123`, `-0.5`, `12`).
void AppendMsAsSeconds(std::string* out, int64_t ms);

}  // namespace modelmetrics::format

#endif  // MODELMETRICS_FORMAT_NUMBER_H_
