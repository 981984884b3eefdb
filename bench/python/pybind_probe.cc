// pybind11 bindings of three of the drop-in's hot methods, over the same C++ handles and the same
// kind of per-object label cache as modelmetrics._native's C API types, so that
// bench/python/observe_bench.py can show what the binding layer alone costs (the issue asks for
// both to be measured; the package uses the C API). Not part of the package.
#include <pybind11/pybind11.h>

#include <string>
#include <string_view>
#include <unordered_map>

#include "modelmetrics/metrics.h"
#include "pipeline/catalog.h"

namespace py = pybind11;
namespace pipeline = modelmetrics::pipeline;
using modelmetrics::Counter;
using modelmetrics::Family;
using modelmetrics::Gauge;
using modelmetrics::Histogram;
using modelmetrics::Registry;

namespace {

Registry& ProbeRegistry() {
  static auto* registry = new Registry();
  return *registry;
}

template <typename F>
F* Register(std::string_view name) {
  const pipeline::FamilySpec* spec = pipeline::FindOmniFamily(name);
  if constexpr (std::is_same_v<F, Family<Gauge>>) {
    return ProbeRegistry().AddGauge(pipeline::OptionsOf(*spec));
  } else if constexpr (std::is_same_v<F, Family<Counter>>) {
    return ProbeRegistry().AddCounter(pipeline::OptionsOf(*spec));
  } else {
    return ProbeRegistry().AddHistogram(pipeline::OptionsOf(*spec));
  }
}

class Probe {
 public:
  explicit Probe(std::string model) : model_(std::move(model)) {
    running_ = Register<Family<Gauge>>("vllm_omni:num_requests_running")->Bind({model_});
    rtf_ = Register<Family<Histogram>>("vllm_omni:audio_rtf");
    frames_ = Register<Family<Counter>>("vllm_omni:audio_frames");
  }
  void SetRunning(double n) { running_.Set(n); }
  void ObserveAudioRtf(std::string_view stage, std::string_view replica, double rtf) {
    if (std::isnan(rtf)) return;
    Key(stage, replica);
    auto it = rtf_cache_.find(key_);
    if (it == rtf_cache_.end()) {
      it = rtf_cache_.emplace(key_, rtf_->Labels({model_, stage, replica})).first;
    }
    it->second.Observe(rtf);
  }
  void IncAudioFrames(std::string_view stage, std::string_view replica, long long n) {
    if (n <= 0) return;
    Key(stage, replica);
    auto it = frames_cache_.find(key_);
    if (it == frames_cache_.end()) {
      it = frames_cache_.emplace(key_, frames_->Labels({model_, stage, replica})).first;
    }
    it->second.Add(static_cast<uint64_t>(n));
  }

 private:
  void Key(std::string_view stage, std::string_view replica) {
    key_.assign(stage);
    key_.push_back('\xff');
    key_.append(replica);
  }
  std::string model_;
  std::string key_;
  Gauge running_;
  Family<Histogram>* rtf_;
  Family<Counter>* frames_;
  std::unordered_map<std::string, Histogram> rtf_cache_;
  std::unordered_map<std::string, Counter> frames_cache_;
};

}  // namespace

PYBIND11_MODULE(pybind_probe, m) {
  py::class_<Probe>(m, "Probe")
      .def(py::init<std::string>())
      .def("set_running", &Probe::SetRunning, py::arg("n"))
      .def("observe_audio_rtf", &Probe::ObserveAudioRtf, py::arg("stage"), py::arg("replica"),
           py::arg("rtf"))
      .def("inc_audio_frames", &Probe::IncAudioFrames, py::arg("stage"), py::arg("replica"),
           py::arg("n_frames"));
}
