// The OrchestratorAggregator and its tables. See stats_tables.h for the contract.
// Section numbers (§n) cite docs/pipeline-behaviour.md.
#include "pipeline/stats_tables.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <sstream>

#include "base/mutex.h"

namespace modelmetrics::pipeline {
namespace {

double SystemNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Engine-reported diffusion timings in ms and their seconds keys (§4.17).
constexpr std::array<std::pair<std::string_view, std::string_view>, 7> kDiffusionMsKeys = {{
    {"preprocess_time_ms", "preprocess_time_s"},
    {"diffusion_engine_exec_time_ms", "diffusion_engine_exec_time_s"},
    {"postprocess_time_ms", "postprocess_time_s"},
    {"vae_decode_time_ms", "vae_decode_time_s"},
    {"forward_time_ms", "forward_time_s"},
    {"scheduler_queue_wait_ms", "scheduler_queue_wait_s"},
    {"kv_recv_time_ms", "kv_recv_time_s"},
}};

std::optional<double> Get(const Timings& t, std::string_view key) {
  auto it = t.find(key);
  return it == t.end() ? std::nullopt : std::optional<double>(it->second);
}

std::string Fixed(double value, int dp) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", dp, value);
  return buf;
}

// Python's str.ljust/rjust width: code points (wide East Asian characters count as one here).
size_t DisplayWidth(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// The stage-table row of one event (excluded fields left out, §5.1), diffusion keys merged.
std::map<std::string, Cell> StageRow(const StageRequestStats& e, bool drop_postprocess) {
  std::map<std::string, Cell> row;
  row["batch_id"] = Cell::Int(e.batch_id);
  row["batch_size"] = Cell::Int(e.batch_size);
  row["num_tokens_in"] = Cell::Int(e.num_tokens_in);
  row["num_tokens_out"] = Cell::Int(e.num_tokens_out);
  row["stage_gen_time_ms"] = Cell::Float(e.stage_gen_time_ms);
  row["replica_id"] = e.replica_id ? Cell::Int(*e.replica_id) : Cell::None();
  if (!drop_postprocess) row["postprocess_time_ms"] = Cell::Float(e.postprocess_time_ms);
  row["audio_generated_frames"] = Cell::Int(e.audio_generated_frames);
  row["audio_sample_rate"] = Cell::Int(e.audio_sample_rate);
  row["audio_duration_s"] = Cell::Float(e.audio_duration_s);
  row["image_pixels"] = Cell::Int(e.image_pixels);
  row["num_inference_steps"] = Cell::Int(e.num_inference_steps);
  row["denoise_step_latency_ms"] = Cell::Float(e.denoise_step_latency_ms);
  row["output_unit_type"] = Cell::Str(e.output_unit_type);
  row["output_unit_count"] = Cell::Int(e.output_unit_count);
  row["serving_time_to_first_output_ms"] = Cell::Float(e.serving_time_to_first_output_ms);
  row["image_time_to_first_output_ms"] = Cell::Float(e.image_time_to_first_output_ms);
  row["time_per_output_unit_ms"] = Cell::Float(e.time_per_output_unit_ms);
  row["inter_output_latency_ms"] = Cell::Float(e.inter_output_latency_ms);
  row["inter_output_latencies_ms"] = Cell::List(e.inter_output_latencies_ms);
  row["vllm_ttft_ms"] = Cell::Float(e.vllm_ttft_ms);
  row["vllm_tpot_ms"] = Cell::Float(e.vllm_tpot_ms);
  row["vllm_itl_ms"] = Cell::Float(e.vllm_itl_ms);
  row["vllm_itls_ms"] = Cell::List(e.vllm_itls_ms);
  if (e.diffusion_metrics) {
    for (const auto& [k, v] : *e.diffusion_metrics) row[k] = Cell::Float(v);
  }
  return row;
}

// Multi-column table: rows are the fields non-zero in some column, sorted by name.
std::string MultiColumnTable(std::string_view title, std::vector<std::string> headers,
                             const std::vector<std::map<std::string, Cell>>& rows) {
  // Duplicate headers get _2, _3, ... (upstream _format_table).
  std::map<std::string, int> seen;
  for (std::string& h : headers) {
    int n = seen[h]++;
    if (n > 0) h += "_" + std::to_string(n + 1);
  }
  std::set<std::string> fields;
  for (const auto& row : rows) {
    for (const auto& [k, cell] : row) {
      if (!cell.IsZero()) fields.insert(k);
    }
  }
  if (fields.empty()) return {};
  std::vector<std::vector<std::string>> out;
  for (const std::string& field : fields) {
    std::vector<std::string> line{field};
    for (const auto& row : rows) {
      auto it = row.find(field);
      line.push_back(it == row.end() ? std::string() : it->second.Format());
    }
    out.push_back(std::move(line));
  }
  headers.insert(headers.begin(), "Field");
  return RenderTable(title, headers, out);
}

}  // namespace

// ---- Records ----

double StageRequestStats::tokens_per_s() const {
  return stage_gen_time_ms > 0 ? num_tokens_out * 1000.0 / stage_gen_time_ms : 0.0;
}

double StageRequestStats::rx_mbps() const {
  return rx_transfer_bytes > 0
             ? rx_transfer_bytes * 8.0 / (std::max(rx_decode_time_ms, 1e-6) * 1000.0)
             : 0.0;
}

// ---- Cells and tables ----

Cell Cell::Bool(bool v) {
  Cell c;
  c.kind = Kind::kBool;
  c.b = v;
  return c;
}
Cell Cell::Int(int64_t v) {
  Cell c;
  c.kind = Kind::kInt;
  c.i = v;
  return c;
}
Cell Cell::Float(double v) {
  Cell c;
  c.kind = Kind::kFloat;
  c.f = v;
  return c;
}
Cell Cell::Str(std::string v) {
  Cell c;
  c.kind = Kind::kString;
  c.s = std::move(v);
  return c;
}
Cell Cell::List(std::vector<double> v) {
  Cell c;
  c.kind = Kind::kList;
  c.list = std::move(v);
  return c;
}

bool Cell::IsZero() const {
  switch (kind) {
    case Kind::kNone:
      return true;
    case Kind::kBool:
      return !b;
    case Kind::kInt:
      return i == 0;
    case Kind::kFloat:
      return f == 0.0;
    case Kind::kString:
      return s.empty();
    case Kind::kList:
      return list.empty();
  }
  return true;
}

std::string Cell::Format() const {
  switch (kind) {
    case Kind::kNone:
      return "None";
    case Kind::kBool:
      return b ? "True" : "False";
    case Kind::kInt:
      return FormatThousands(i);
    case Kind::kFloat:
      return FormatFloatThousands(f, 3);
    case Kind::kString:
      return s;
    case Kind::kList: {
      if (list.empty()) return "";
      double mean = std::accumulate(list.begin(), list.end(), 0.0) / list.size();
      return FormatFloatThousands(mean, 3) + " (n=" + std::to_string(list.size()) + ")";
    }
  }
  return "";
}

namespace {
// Inserts ',' every three digits into the integer digits of `text` (after an optional '-').
std::string GroupDigits(std::string text) {
  size_t start = (!text.empty() && text[0] == '-') ? 1 : 0;
  size_t end = text.find('.');
  if (end == std::string::npos) end = text.size();
  for (size_t i = end; i > start + 3; i -= 3) text.insert(i - 3, 1, ',');
  return text;
}
}  // namespace

std::string FormatThousands(int64_t value) { return GroupDigits(std::to_string(value)); }

std::string FormatFloatThousands(double value, int dp) {
  std::string text = Fixed(value, dp);
  if (text.find_first_not_of("-0123456789.") != std::string::npos) return text;  // nan, inf
  return GroupDigits(std::move(text));
}

std::string RenderTable(std::string_view title, const std::vector<std::string>& headers,
                        const std::vector<std::vector<std::string>>& rows) {
  if (rows.empty()) return "[" + std::string(title) + "] <empty>";
  std::vector<size_t> widths(headers.size(), 0);
  for (size_t c = 0; c < headers.size(); ++c) widths[c] = DisplayWidth(headers[c]);
  for (const auto& row : rows) {
    for (size_t c = 0; c < row.size() && c < widths.size(); ++c) {
      widths[c] = std::max(widths[c], DisplayWidth(row[c]));
    }
  }
  std::string border = "+";
  for (size_t w : widths) border += std::string(w + 2, '-') + "+";
  auto line = [&widths](const std::vector<std::string>& cells) {
    std::string out = "|";
    for (size_t c = 0; c < widths.size(); ++c) {
      const std::string& cell = c < cells.size() ? cells[c] : std::string();
      std::string pad(widths[c] - DisplayWidth(cell), ' ');
      out += " " + (c == 0 ? cell + pad : pad + cell) + " |";
    }
    return out;
  };
  std::string out =
      "[" + std::string(title) + "]\n" + border + "\n" + line(headers) + "\n" + border + "\n";
  for (const auto& row : rows) out += line(row) + "\n";
  out += border;
  return out;
}

// ---- OrchestratorAggregator ----

OrchestratorAggregator::OrchestratorAggregator(Options options) : options_(std::move(options)) {
  const auto n = static_cast<size_t>(std::max(options_.num_stages, 1));
  stage_first_ts_.resize(n);
  stage_last_ts_.resize(n);
  last_finish_ts_ = options_.wall_start_ts;
}

double OrchestratorAggregator::Now() const {
  return options_.clock ? options_.clock() : SystemNow();
}

void OrchestratorAggregator::SetEmitter(TransferEmitter* emitter) {
  base::MutexLock lock(&mu_);
  options_.emitter = emitter;
}

void OrchestratorAggregator::SetReplicaResolver(ReplicaResolver resolver) {
  base::MutexLock lock(&mu_);
  options_.replica_resolver = std::move(resolver);
}

void OrchestratorAggregator::AccumulateDiffusionMetrics(std::string_view stage_type,
                                                        std::string_view request_id,
                                                        const Timings& engine_metrics) {
  if (stage_type != "diffusion" || engine_metrics.empty()) return;
  base::MutexLock lock(&mu_);
  auto it = diffusion_buckets_.find(request_id);
  if (it == diffusion_buckets_.end()) {
    it = diffusion_buckets_.emplace(std::string(request_id), Timings{}).first;
  }
  for (const auto& [key, value] : engine_metrics) {
    std::string_view out_key = key;
    double out_value = value;
    for (const auto& [ms_key, s_key] : kDiffusionMsKeys) {
      if (key == ms_key) {
        out_key = s_key;
        out_value = value / 1000.0;
        break;
      }
    }
    auto slot = it->second.find(out_key);
    if (slot == it->second.end()) {
      it->second.emplace(std::string(out_key), out_value);
    } else {
      slot->second += out_value;
    }
  }
}

StageRequestStats OrchestratorAggregator::OnStageMetrics(StageRequestStats stats) {
  base::MutexLock lock(&mu_);
  if (auto it = diffusion_buckets_.find(stats.request_id); it != diffusion_buckets_.end()) {
    stats.diffusion_metrics = std::move(it->second);
    diffusion_buckets_.erase(it);
  }
  int64_t steps = stats.num_inference_steps;
  if (steps == 0 && stats.diffusion_metrics) {
    steps = static_cast<int64_t>(Get(*stats.diffusion_metrics, "num_inference_steps").value_or(0));
  }
  if (stats.output_unit_type == "image" && steps > 0) {
    std::optional<double> forward_s;
    if (stats.diffusion_metrics) forward_s = Get(*stats.diffusion_metrics, "forward_time_s");
    double total_ms = forward_s ? *forward_s * 1000.0 : stats.stage_gen_time_ms;
    stats.denoise_step_latency_ms = total_ms / static_cast<double>(steps);
  }
  if (!options_.log_stats) return stats;

  const double now = Now();
  if (stats.stage_id >= 0 && static_cast<size_t>(stats.stage_id) < stage_last_ts_.size()) {
    auto& first = stage_first_ts_[stats.stage_id];
    auto& last = stage_last_ts_[stats.stage_id];
    if (!first) first = now;
    last = last ? std::max(*last, now) : now;
  }
  // The request's replica on this stage, for the transfer edges (§4.13 replica cache).
  if (stats.replica_id) replica_cache_[{stats.stage_id, stats.request_id}] = *stats.replica_id;
  stage_events_[stats.request_id].push_back(stats);
  RecordTransferRxLocked(stats);  // the RX side of the edge into this stage (§4.13)
  return stats;
}

void OrchestratorAggregator::RecordTransferRx(const StageRequestStats& stats) {
  if (!options_.log_stats) return;
  base::MutexLock lock(&mu_);
  RecordTransferRxLocked(stats);
}

void OrchestratorAggregator::RecordTransferRxLocked(const StageRequestStats& stats) {
  if (stats.stage_id <= 0) return;
  const int from = stats.stage_id - 1;
  const int to = stats.stage_id;
  if (stats.replica_id) replica_cache_[{to, stats.request_id}] = *stats.replica_id;
  TransferEdgeStats& evt = EdgeLocked(from, to, stats.request_id);
  const bool size_unknown = evt.size_bytes == 0;
  if (size_unknown) evt.size_bytes = stats.rx_transfer_bytes;
  evt.rx_decode_time_ms += stats.rx_decode_time_ms;
  evt.in_flight_time_ms += stats.rx_in_flight_time_ms;
  if (options_.emitter == nullptr) return;
  auto edge = ResolveEdgeLocked(from, to, stats.request_id);
  if (!edge) return;
  // Deliberate difference: the hop's size is observed here when the TX side did not know it
  // (upstream's orchestrator TX path observes 0 bytes instead).
  if (size_unknown && stats.rx_transfer_bytes > 0) {
    options_.emitter->ObserveTransferSize(*edge, static_cast<double>(stats.rx_transfer_bytes));
  }
  options_.emitter->ObserveTransferRxTime(*edge, stats.rx_decode_time_ms / 1000.0);
  options_.emitter->ObserveTransferInFlightTime(*edge, stats.rx_in_flight_time_ms / 1000.0);
}

void OrchestratorAggregator::OnStageSubmit(int stage_id, std::optional<double> submit_ts) {
  if (!options_.log_stats) return;
  base::MutexLock lock(&mu_);
  if (stage_id < 0 || static_cast<size_t>(stage_id) >= stage_first_ts_.size()) return;
  if (!stage_first_ts_[stage_id]) stage_first_ts_[stage_id] = submit_ts.value_or(Now());
}

void OrchestratorAggregator::OnForward(int from_stage, int to_stage, std::string_view request_id,
                                       int64_t size_bytes, double tx_ms, bool used_shm) {
  if (!options_.log_stats) return;
  {
    base::MutexLock lock(&mu_);
    if (to_stage >= 0 && static_cast<size_t>(to_stage) < stage_first_ts_.size() &&
        !stage_first_ts_[to_stage]) {
      stage_first_ts_[to_stage] = Now();
    }
  }
  RecordTransferTx(from_stage, to_stage, request_id, size_bytes, tx_ms, used_shm);
}

void OrchestratorAggregator::RecordTransferTx(int from_stage, int to_stage,
                                              std::string_view request_id, int64_t size_bytes,
                                              double tx_ms, bool used_shm) {
  if (!options_.log_stats) return;
  base::MutexLock lock(&mu_);
  TransferEdgeStats& evt = EdgeLocked(from_stage, to_stage, request_id);
  evt.size_bytes += std::max<int64_t>(size_bytes, 0);
  evt.tx_time_ms += tx_ms;
  evt.used_shm = evt.used_shm || used_shm;
  if (options_.emitter == nullptr) return;
  auto edge = ResolveEdgeLocked(from_stage, to_stage, request_id);
  if (!edge) return;
  // Deliberate difference: an unknown size (0) is not observed (upstream observes 0 bytes).
  if (size_bytes > 0) {
    options_.emitter->ObserveTransferSize(*edge, static_cast<double>(size_bytes));
  }
  options_.emitter->ObserveTransferTxTime(*edge, tx_ms / 1000.0);
}

TransferEdgeStats& OrchestratorAggregator::EdgeLocked(int from_stage, int to_stage,
                                                      std::string_view request_id) {
  for (TransferEdgeStats& evt : transfer_events_) {
    if (evt.from_stage == from_stage && evt.to_stage == to_stage && evt.request_id == request_id) {
      return evt;
    }
  }
  TransferEdgeStats evt;
  evt.from_stage = from_stage;
  evt.to_stage = to_stage;
  evt.request_id = std::string(request_id);
  transfer_events_.push_back(std::move(evt));
  return transfer_events_.back();
}

std::optional<TransferEdge> OrchestratorAggregator::ResolveEdgeLocked(int from_stage, int to_stage,
                                                                      std::string_view request_id) {
  auto resolve = [&](int stage) REQUIRES(mu_) -> std::optional<int> {
    auto it = replica_cache_.find(std::pair<int, std::string>(stage, std::string(request_id)));
    if (it != replica_cache_.end()) return it->second;
    if (options_.replica_resolver) return options_.replica_resolver(stage, request_id);
    return std::nullopt;
  };
  std::optional<int> from_r = resolve(from_stage);
  std::optional<int> to_r = resolve(to_stage);
  if (!from_r || !to_r) return std::nullopt;
  return TransferEdge{from_stage, *from_r, to_stage, *to_r};
}

bool OrchestratorAggregator::OnFinalizeRequest(int stage_id, std::string_view request_id,
                                               double req_start_ts) {
  if (!options_.log_stats) return true;
  base::MutexLock lock(&mu_);
  if (!e2e_done_.emplace(request_id).second) return false;
  const double t1 = Now();
  if (stage_id >= 0 && static_cast<size_t>(stage_id) < stage_last_ts_.size()) {
    auto& last = stage_last_ts_[stage_id];
    last = last ? std::max(*last, t1) : t1;
  }
  last_finish_ts_ = std::max(last_finish_ts_, t1);
  RequestE2EStats rec;
  rec.request_id = std::string(request_id);
  rec.e2e_total_ms = (t1 - req_start_ts) * 1000.0;
  if (auto it = stage_events_.find(request_id); it != stage_events_.end()) {
    for (const StageRequestStats& e : it->second) {
      if (e.stage_id == 0) rec.e2e_total_tokens += e.num_tokens_in;
      rec.e2e_total_tokens += e.num_tokens_out;
    }
  }
  for (const TransferEdgeStats& evt : transfer_events_) {
    if (evt.request_id != request_id) continue;
    rec.transfers_total_time_ms += evt.total_time_ms();
    rec.transfers_total_bytes += evt.size_bytes;
  }
  ++e2e_count_;
  e2e_total_tokens_ += rec.e2e_total_tokens;
  e2e_events_.push_back(std::move(rec));
  for (auto it = replica_cache_.begin(); it != replica_cache_.end();) {
    it = it->first.second == request_id ? replica_cache_.erase(it) : std::next(it);
  }
  return true;
}

namespace {

// "[OmniTiming] req=... total=...s preprocess=... engine=... stages=[0:1.00s,...] transfers=[...]"
std::string OmniTimingLine(const std::string& rid, const RequestE2EStats& e2e,
                           const StageRequestStats* last,
                           const std::vector<StageRequestStats>& events,
                           const std::vector<const TransferEdgeStats*>& edges) {
  std::optional<double> preprocess_ms;
  std::optional<double> ar2diffusion_ms;
  if (last != nullptr) {
    preprocess_ms = Get(last->pipeline_timings, "preprocess_ms");
    ar2diffusion_ms = Get(last->pipeline_timings, "ar2diffusion_ms");
  }
  const double total_s = e2e.e2e_total_ms / 1000.0;
  std::string line = "[OmniTiming] req=" + rid + " total=" + Fixed(total_s, 2) + "s";
  if (preprocess_ms) line += " preprocess=" + Fixed(*preprocess_ms / 1000.0, 2) + "s";
  line += " engine=" + Fixed(total_s - preprocess_ms.value_or(0) / 1000.0, 2) + "s";
  std::map<int, double> gen_by_stage;
  for (const StageRequestStats& e : events) gen_by_stage[e.stage_id] += e.stage_gen_time_ms;
  line += " stages=[";
  bool first = true;
  for (const auto& [sid, ms] : gen_by_stage) {
    line += (first ? "" : ",") + std::to_string(sid) + ":" + Fixed(ms / 1000.0, 2) + "s";
    first = false;
  }
  line += "] transfers=[";
  first = true;
  for (const TransferEdgeStats* evt : edges) {
    line += (first ? "" : ",") + std::to_string(evt->from_stage) + "->" +
            std::to_string(evt->to_stage) + "=" + Fixed(evt->tx_time_ms, 2) + "ms";
    first = false;
  }
  line += "]";
  if (ar2diffusion_ms) line += " ar2diffusion=" + Fixed(*ar2diffusion_ms, 2) + "ms";
  return line;
}

// RequestE2EStats: non-zero fields sorted by name; "" when all are zero.
std::string RequestE2ETable(const std::string& rid, const RequestE2EStats& e2e) {
  std::map<std::string, Cell> fields = {
      {"e2e_total_ms", Cell::Float(e2e.e2e_total_ms)},
      {"e2e_total_tokens", Cell::Int(e2e.e2e_total_tokens)},
      {"transfers_total_time_ms", Cell::Float(e2e.transfers_total_time_ms)},
      {"transfers_total_kbytes",
       Cell::Float(static_cast<double>(e2e.transfers_total_bytes) / 1024.0)},
  };
  std::vector<std::vector<std::string>> rows;
  for (const auto& [name, cell] : fields) {
    if (!cell.IsZero()) rows.push_back({name, cell.Format()});
  }
  if (rows.empty()) return "";
  return RenderTable("RequestE2EStats [request_id=" + rid + "]", {"Field", "Value"}, rows);
}

// StageRequestStats: columns = stage ids (`events` sorted by stage).
std::string StageTable(const std::string& rid, const std::vector<StageRequestStats>& events) {
  const bool has_dm = std::any_of(events.begin(), events.end(), [](const auto& e) {
    return e.diffusion_metrics && !e.diffusion_metrics->empty();
  });
  std::vector<std::string> headers;
  std::vector<std::map<std::string, Cell>> rows;
  for (const StageRequestStats& e : events) {
    headers.push_back(std::to_string(e.stage_id));
    rows.push_back(StageRow(e, has_dm));
  }
  return MultiColumnTable("StageRequestStats [request_id=" + rid + "]", headers, rows);
}

// TransferEdgeStats: columns = edges sorted by (from, to).
std::string TransferTable(const std::string& rid, std::vector<const TransferEdgeStats*> edges) {
  std::stable_sort(edges.begin(), edges.end(), [](const auto* a, const auto* b) {
    return std::pair(a->from_stage, a->to_stage) < std::pair(b->from_stage, b->to_stage);
  });
  std::vector<std::string> headers;
  std::vector<std::map<std::string, Cell>> rows;
  for (const TransferEdgeStats* evt : edges) {
    headers.push_back(std::to_string(evt->from_stage) + "->" + std::to_string(evt->to_stage));
    rows.push_back({
        {"size_kbytes", Cell::Float(static_cast<double>(evt->size_bytes) / 1024.0)},
        {"tx_time_ms", Cell::Float(evt->tx_time_ms)},
        {"rx_decode_time_ms", Cell::Float(evt->rx_decode_time_ms)},
        {"in_flight_time_ms", Cell::Float(evt->in_flight_time_ms)},
    });
  }
  return MultiColumnTable("TransferEdgeStats [request_id=" + rid + "]", headers, rows);
}

void AppendIfAny(std::vector<std::string>* blocks, std::string block) {
  if (!block.empty()) blocks->push_back(std::move(block));
}

}  // namespace

// 1. Overall summary: non-zero fields in insertion order; "" when all are zero.
std::string OrchestratorAggregator::OverallTableLocked() const {
  const double wall_ms = std::max(0.0, (last_finish_ts_ - options_.wall_start_ts) * 1000.0);
  std::vector<std::pair<std::string, Cell>> overall = {
      {"e2e_requests", Cell::Int(e2e_count_)},
      {"e2e_wall_time_ms", Cell::Float(wall_ms)},
      {"e2e_total_tokens", Cell::Int(e2e_total_tokens_)},
      {"e2e_avg_time_per_request_ms",
       Cell::Float(e2e_count_ > 0 ? wall_ms / static_cast<double>(e2e_count_) : 0.0)},
      {"e2e_avg_tokens_per_s",
       Cell::Float(wall_ms > 0 ? static_cast<double>(e2e_total_tokens_) * 1000.0 / wall_ms : 0.0)},
  };
  double preprocess_sum = 0;
  int preprocess_n = 0;
  for (const auto& [rid, events] : stage_events_) {
    for (const StageRequestStats& e : events) {
      if (auto p = Get(e.pipeline_timings, "preprocess_ms")) {
        preprocess_sum += *p;
        ++preprocess_n;
        break;
      }
    }
  }
  if (preprocess_n > 0) {
    overall.emplace_back("input_preprocess_time_ms", Cell::Float(preprocess_sum / preprocess_n));
  }
  for (size_t i = 0; i < stage_first_ts_.size(); ++i) {
    double ms = (stage_first_ts_[i] && stage_last_ts_[i])
                    ? (*stage_last_ts_[i] - *stage_first_ts_[i]) * 1000.0
                    : 0.0;
    overall.emplace_back("e2e_stage_" + std::to_string(i) + "_wall_time_ms", Cell::Float(ms));
  }
  std::vector<std::vector<std::string>> overall_rows;
  for (const auto& [name, cell] : overall) {
    if (!cell.IsZero()) overall_rows.push_back({name, cell.Format()});
  }
  if (overall_rows.empty()) return "";
  return RenderTable("Overall Summary", {"Field", "Value"}, overall_rows);
}

// 2. One request's blocks: its E2E table and [OmniTiming] line, its stage and transfer tables.
void OrchestratorAggregator::AppendRequestBlocksLocked(const std::string& rid,
                                                       std::vector<std::string>* blocks) const {
  auto events_it = stage_events_.find(rid);
  std::vector<StageRequestStats> events;
  if (events_it != stage_events_.end()) events = events_it->second;
  std::stable_sort(events.begin(), events.end(),
                   [](const auto& a, const auto& b) { return a.stage_id < b.stage_id; });
  std::vector<const TransferEdgeStats*> edges;  // insertion order
  for (const TransferEdgeStats& evt : transfer_events_) {
    if (evt.request_id == rid) edges.push_back(&evt);
  }
  auto e2e_it = std::find_if(e2e_events_.begin(), e2e_events_.end(),
                             [&rid](const RequestE2EStats& e) { return e.request_id == rid; });
  if (e2e_it != e2e_events_.end()) {
    AppendIfAny(blocks, RequestE2ETable(rid, *e2e_it));
    const StageRequestStats* last = nullptr;  // the last recorded, not the last stage
    if (events_it != stage_events_.end() && !events_it->second.empty()) {
      last = &events_it->second.back();
    }
    blocks->push_back(OmniTimingLine(rid, *e2e_it, last, events, edges));
  }
  if (!events.empty()) AppendIfAny(blocks, StageTable(rid, events));
  if (!edges.empty()) AppendIfAny(blocks, TransferTable(rid, edges));
}

std::string OrchestratorAggregator::BuildAndLogSummary() {
  if (!options_.log_stats) return {};
  base::MutexLock lock(&mu_);
  std::vector<std::string> blocks;
  AppendIfAny(&blocks, OverallTableLocked());
  // Per request, sorted by id.
  std::set<std::string> ids;
  for (const auto& [rid, events] : stage_events_) ids.insert(rid);
  for (const RequestE2EStats& e : e2e_events_) ids.insert(e.request_id);
  for (const std::string& rid : ids) AppendRequestBlocksLocked(rid, &blocks);

  std::string out;
  for (const std::string& block : blocks) out += block + "\n";
  if (options_.sink != nullptr) *options_.sink << out << std::flush;
  return out;
}

std::optional<TransferEdgeStats> OrchestratorAggregator::transfer(
    int from_stage, int to_stage, std::string_view request_id) const {
  base::MutexLock lock(&mu_);
  for (const TransferEdgeStats& evt : transfer_events_) {
    if (evt.from_stage == from_stage && evt.to_stage == to_stage && evt.request_id == request_id) {
      return evt;
    }
  }
  return std::nullopt;
}

std::vector<StageRequestStats> OrchestratorAggregator::stage_events(
    std::string_view request_id) const {
  base::MutexLock lock(&mu_);
  auto it = stage_events_.find(request_id);
  return it == stage_events_.end() ? std::vector<StageRequestStats>{} : it->second;
}

std::vector<RequestE2EStats> OrchestratorAggregator::e2e_events() const {
  base::MutexLock lock(&mu_);
  return e2e_events_;
}

StageRequestStats MergeStageMetricEvents(std::span<const StageRequestStats> events) {
  if (events.empty()) return {};
  StageRequestStats merged = events.front();
  double tpot_weighted = 0, tpot_weight = 0;
  auto add_tpot = [&](const StageRequestStats& e) {
    if (e.vllm_tpot_ms > 0) {
      const double w = static_cast<double>(std::max<int64_t>(e.num_tokens_out - 1, 1));
      tpot_weighted += e.vllm_tpot_ms * w;
      tpot_weight += w;
    }
  };
  add_tpot(merged);
  auto first_positive = [](double& into, double value) {
    if (!(into > 0) && value > 0) into = value;
  };
  for (size_t i = 1; i < events.size(); ++i) {
    const StageRequestStats& e = events[i];
    merged.num_tokens_in += e.num_tokens_in;
    merged.num_tokens_out += e.num_tokens_out;
    merged.stage_gen_time_ms += e.stage_gen_time_ms;
    merged.postprocess_time_ms += e.postprocess_time_ms;
    merged.audio_generated_frames += e.audio_generated_frames;
    merged.audio_duration_s += e.audio_duration_s;
    merged.image_pixels += e.image_pixels;
    merged.output_unit_count += e.output_unit_count;
    if (merged.audio_sample_rate <= 0 && e.audio_sample_rate > 0) {
      merged.audio_sample_rate = e.audio_sample_rate;
    }
    first_positive(merged.serving_time_to_first_output_ms, e.serving_time_to_first_output_ms);
    first_positive(merged.image_time_to_first_output_ms, e.image_time_to_first_output_ms);
    first_positive(merged.vllm_ttft_ms, e.vllm_ttft_ms);
    if (e.finish_reason.has_value()) merged.finish_reason = e.finish_reason;
    if (!e.output_unit_type.empty()) merged.output_unit_type = e.output_unit_type;
    if (!e.final_output_type.empty()) merged.final_output_type = e.final_output_type;
    if (e.denoise_step_latency_ms > 0) merged.denoise_step_latency_ms = e.denoise_step_latency_ms;
    merged.inter_output_latencies_ms.insert(merged.inter_output_latencies_ms.end(),
                                            e.inter_output_latencies_ms.begin(),
                                            e.inter_output_latencies_ms.end());
    merged.vllm_itls_ms.insert(merged.vllm_itls_ms.end(), e.vllm_itls_ms.begin(),
                               e.vllm_itls_ms.end());
    add_tpot(e);
  }
  auto mean = [](const std::vector<double>& v, double fallback) {
    if (v.empty()) return fallback;
    double sum = 0;
    for (double x : v) sum += x;
    return sum / static_cast<double>(v.size());
  };
  merged.inter_output_latency_ms =
      mean(merged.inter_output_latencies_ms, merged.inter_output_latency_ms);
  merged.vllm_itl_ms = mean(merged.vllm_itls_ms, merged.vllm_itl_ms);
  merged.vllm_tpot_ms = tpot_weight > 0 ? tpot_weighted / tpot_weight : 0;
  merged.time_per_output_unit_ms =
      merged.output_unit_count > 1
          ? std::max(merged.stage_gen_time_ms - merged.serving_time_to_first_output_ms, 0.0) /
                static_cast<double>(merged.output_unit_count - 1)
          : 0;
  return merged;
}

}  // namespace modelmetrics::pipeline
