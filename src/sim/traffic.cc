// See traffic.h.
#include "traffic.h"

namespace modelmetrics::sim {

RequestDraw DrawRequest(Rng& rng, bool prefill, bool decode) {
  RequestDraw q;
  q.prompt = std::clamp(std::round(rng.LogNormal(600, 0.5)), 16.0, 4000.0);
  q.output = prefill ? 1 : std::clamp(std::round(rng.LogNormal(120, 0.6)), 2.0, 1024.0);
  const double hit_rate = rng.Between(0.5, 0.8);
  q.local_hits = std::floor(q.prompt * hit_rate / 16) * 16;
  q.streaming = rng.Chance(0.5);
  q.itl = std::max(0.002, 0.005 * (1 + 0.15 * rng.Normal()));
  q.queue = rng.Between(0.0005, 0.01);
  q.prefill_time = 0.008 + 0.00003 * (q.prompt - q.local_hits) * rng.Between(0.8, 1.2);
  q.transfer_wait = decode ? rng.Between(0.01, 0.03) : 0;
  q.ttft = q.queue + q.prefill_time + q.transfer_wait;
  q.decode_time = q.itl * (q.output - 1);
  q.e2e = q.ttft + q.decode_time;
  q.prefill = prefill;
  q.decode = decode;
  return q;
}

}  // namespace modelmetrics::sim
