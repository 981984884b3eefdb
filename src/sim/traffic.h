// The simulators' traffic model: counter-based randomness (tick k's draws depend on (seed, Pod,
// k) alone, so a seeded run repeats exactly and a Pod's history can be replayed from any tick),
// and one request's sizes and times, drawn once and recorded by each exporter as it counts them.
//
// Thread-safety: an Rng belongs to one thread; DrawRequest is a pure function of the Rng.
#ifndef MODELMETRICS_SIM_TRAFFIC_H_
#define MODELMETRICS_SIM_TRAFFIC_H_

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numbers>

namespace modelmetrics::sim {

inline uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

class Rng {
 public:
  Rng(uint64_t seed, uint64_t pod, uint64_t tick)
      : state_(SplitMix(SplitMix(SplitMix(seed) ^ pod) ^ tick)) {}
  uint64_t Next() { return state_ = SplitMix(state_); }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  double Between(double lo, double hi) { return lo + (hi - lo) * Uniform(); }
  bool Chance(double p) { return Uniform() < p; }
  double Normal() {
    double u1 = std::max(Uniform(), 1e-12);
    return std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * Uniform());
  }
  double LogNormal(double median, double sigma) { return median * std::exp(sigma * Normal()); }
  int Poisson(double lambda) {
    if (lambda <= 0) return 0;
    if (lambda > 30)
      return std::max(0, static_cast<int>(std::lround(lambda + std::sqrt(lambda) * Normal())));
    double limit = std::exp(-lambda), product = Uniform();
    int n = 0;
    while (product > limit) {
      ++n;
      product *= Uniform();
    }
    return n;
  }
  size_t Pick(size_t n) { return n == 0 ? 0 : static_cast<size_t>(Next() % n); }

 private:
  uint64_t state_;
};

// One request of a tick's traffic, drawn once and recorded by each exporter as it counts it.
struct RequestDraw {
  double prompt, output, local_hits;
  bool streaming;
  double itl, queue, prefill_time, transfer_wait, ttft, decode_time, e2e;
  bool prefill, decode;  // the Pod is the prefill (decode) half of a P/D pair
};

// One request: a log-normal prompt and output, a prefix-cache hit share, streaming or not, and
// the queue, prefill, transfer and decode times that follow. The draws' order is the model's.
RequestDraw DrawRequest(Rng& rng, bool prefill, bool decode);

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_TRAFFIC_H_
