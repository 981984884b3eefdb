// Simulated full-duplex sessions. See duplex_sessions.h for the contract.
#include "duplex_sessions.h"

#include <algorithm>

namespace modelmetrics::sim {
namespace {

constexpr double kTickS = 0.08;          // upstream's append tick period (80 ms)
constexpr double kTokensPerAppend = 40;  // audio tokens retained per appended chunk
constexpr double kBytesPerToken = 6;     // replay journal bytes per committed token
constexpr double kReceiptCap = 64;       // the bounded append-receipt cache

}  // namespace

void DuplexSessions::Start() {
  after_(0.1, [this] { Open(); });
  after_(0.5, [this] { Report(); });
}

void DuplexSessions::Open() {
  const uint64_t id = ++opened_;
  sessions_[id] = Session{.limit = Uniform(0, 1) < 0.5 ? 2048.0 : 4096.0, .generation = 1};
  metrics_.ObserveControlQueueWait("open", Uniform(0.0002, 0.003));
  const int ticks = static_cast<int>(Uniform(2.5, 5) / kTickS);
  after_(kTickS, [this, id, ticks] { Append(id, 1, ticks); });
  after_(Uniform(0.8, 2), [this] { Open(); });
}

void DuplexSessions::Append(uint64_t id, int tick, int ticks) {
  Session& s = sessions_.at(id);
  metrics_.ObserveControlQueueWait("append", Uniform(0.0001, 0.004));
  const double roll = Uniform(0, 1);
  const std::string_view outcome = roll < 0.94   ? "success"
                                   : roll < 0.98 ? "deduplicated"
                                                 : "timeout";
  metrics_.ObserveAppend(outcome, Uniform(0.002, 0.03));
  if (outcome == "success") {
    s.tokens += kTokensPerAppend;
    s.journal_tokens += kTokensPerAppend;
    s.receipts = std::min(s.receipts + 1, kReceiptCap);
  }
  if (s.tokens > s.limit) {
    s.tokens = s.limit / 2;  // rollover keeps the recent half of the context
    Rebuild(s, "context_rollover");
  }
  if (id % 3 == 2 && tick == ticks / 2) {  // the replica holding its KV went away
    metrics_.IncReplicaAffinityLoss();
    Rebuild(s, "replica_loss");
  }
  if (tick % 10 == 0) metrics_.ObserveControlQueueWait("touch", Uniform(0.0001, 0.001));
  if (tick < ticks) {
    after_(kTickS, [this, id, tick, ticks] { Append(id, tick + 1, ticks); });
  } else {
    Close(id);
  }
}

void DuplexSessions::Rebuild(Session& s, std::string_view reason) {
  const bool ok = Uniform(0, 1) >= 0.25;
  metrics_.IncKvRecovery(reason, ok ? "success" : "failure");
  s.generation += 1;
  metrics_.ObserveControlQueueWait("resume", Uniform(0.001, 0.02));
}

void DuplexSessions::Close(uint64_t id) {
  sessions_.at(id).closing = true;
  metrics_.ObserveControlQueueWait("close", Uniform(0.0002, 0.003));
  after_(Uniform(0.2, 0.6), [this, id] { sessions_.erase(id); });
}

void DuplexSessions::Report() {
  double active = 0, closing = 0;
  Session max;
  double utilization = 0;
  for (const auto& [id, s] : sessions_) {
    (s.closing ? closing : active) += 1;
    if (s.closing) continue;
    max.tokens = std::max(max.tokens, s.tokens);
    max.limit = std::max(max.limit, s.limit);
    max.receipts = std::max(max.receipts, s.receipts);
    max.journal_tokens = std::max(max.journal_tokens, s.journal_tokens);
    max.generation = std::max(max.generation, s.generation);
    utilization = std::max(utilization, s.tokens / s.limit);
  }
  metrics_.SetSessions(active, closing);
  metrics_.SetContext(max.tokens, max.limit, utilization, max.receipts);
  metrics_.SetRecoveryState(max.journal_tokens, max.journal_tokens * kBytesPerToken,
                            max.generation);
  after_(0.5, [this] { Report(); });
}

}  // namespace modelmetrics::sim
