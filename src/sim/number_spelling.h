// How the three client libraries behind the simulated exporters spell a double in the text
// format: prometheus_client (Python), client_golang (Go) and the Rust prometheus crate. Real
// scrapes differ exactly there (`1.0` and `1`, `1e+06` and `1000000`), and the parsers must read
// all three.
//
// Thread-safety: pure functions.
#ifndef MODELMETRICS_SIM_NUMBER_SPELLING_H_
#define MODELMETRICS_SIM_NUMBER_SPELLING_H_

#include <string>

namespace modelmetrics::sim {

std::string PythonFloat(double value);  // prometheus_client floatToGoString
std::string GoFloat(double value);      // strconv.FormatFloat(v, 'g', -1, 64)
std::string RustFloat(double value);    // Rust's f64 Display

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_NUMBER_SPELLING_H_
