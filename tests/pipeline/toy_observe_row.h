// A toy observe method, written once here, for the test that one row of the observe table works
// from both C++ (ObserveRecorder) and Python (a type built by src/python/observe_type.h):
// tests/python/test_observe_table.py compares what the two record.
#ifndef MODELMETRICS_TESTS_PIPELINE_TOY_OBSERVE_ROW_H_
#define MODELMETRICS_TESTS_PIPELINE_TOY_OBSERVE_ROW_H_

#include "pipeline/observe_table.h"

namespace modelmetrics::pipeline::toy {

// Two families, four parameters (the last optional), every label source the audio rows use.
inline constexpr ObserveMethod kToyRecordFrames{
    .name = "toy_record_frames",
    .doc =
        "audio_frames_total{stage, replica} += n_frames when > 0, and "
        "audio_skipped_requests_total{stage, replica, reason or \"unknown\"} += 1",
    .params = {"stage", "replica", "n_frames", "reason"},
    .optional = 1,
    .effects = {{{.op = ObserveOp::kAdd,
                  .family = OmniFamily::kAudioFrames,
                  .labels = {Arg(0), Arg(1)},
                  .value = 2},
                 {.op = ObserveOp::kInc,
                  .family = OmniFamily::kAudioSkippedRequests,
                  .labels = {Arg(0), Arg(1), ArgOrUnknown(3)}}}}};

inline constexpr ObserveMethod kToyMethods[] = {kToyRecordFrames};
static_assert(std::ranges::all_of(kToyMethods, WellFormed));

}  // namespace modelmetrics::pipeline::toy

#endif  // MODELMETRICS_TESTS_PIPELINE_TOY_OBSERVE_ROW_H_
