"""Drop-in for ``vllm_omni.metrics.modality``: audio, Speech stream and diffusion breakdown
families, and the three finalize helpers upstream's entrypoints call.

``OmniModalityMetrics`` binds every child lazily; ``stage`` and ``replica`` are str label values
(callers pass ``str(id)``). The observe methods run in C++; the module functions are upstream's
Python-shaped dispatch.

Section numbers (§n) cite docs/pipeline-behaviour.md.
"""

from modelmetrics import _native

from . import utils
from .utils import count_audio_frames, extract_mm_output  # re-exported, as upstream imports them
from .definitions import AUDIO_CONTINUITY_DEFAULT_THRESHOLD_S

_native.register_classes("modality")


OmniModalityMetrics = _native.OmniModalityMetrics


def observe_modality_at_finalize(
    mod_metrics, *, output_type, stage_id, replica_id, stage_metrics, engine_outputs
):
    """At request finalize: the diffusion breakdown always, the audio part for audio outputs.
    Nothing without a replica or stage metrics (§4.3)."""
    if replica_id is None or stage_metrics is None:
        return
    utils.observe_diffusion_finalize(
        mod_metrics, stage_id=stage_id, replica_id=replica_id, stage_metrics=stage_metrics
    )
    if output_type == "audio":
        utils.observe_audio_finalize(
            mod_metrics,
            stage_id=stage_id,
            replica_id=replica_id,
            stage_metrics=stage_metrics,
            engine_outputs=engine_outputs,
        )


def observe_audio_first_packet(mod_metrics, *, stage_id, replica_id, arrival_ts, now_ts):
    """Audio TTFP, ``max(now_ts - arrival_ts, 0)``; skipped without a replica or when
    ``arrival_ts <= 0`` (§4.5)."""
    if replica_id is None or arrival_ts is None or arrival_ts <= 0:
        return
    mod_metrics.observe_audio_ttfp(str(stage_id), str(replica_id), max(now_ts - arrival_ts, 0.0))


def observe_audio_streaming_finalize(
    mod_metrics,
    *,
    stage_id,
    replica_id,
    chunk_arrival_times_s,
    chunk_bytes,
    sample_rate,
    channels=1,
    threshold_s=AUDIO_CONTINUITY_DEFAULT_THRESHOLD_S,
):
    """A completed stream's player simulation (§4.1): the worst underrun always, and
    ``audio_continuity_ok_total{threshold_ms}`` when it stayed within the threshold (inclusive).

    Skipped without a replica or arrivals, and -- unlike upstream, which scores them as perfect
    playback -- when the arrival and byte lists differ in length (a broken recording, #6914).
    The simulation is the C++ one: a deficit counts only from one sample frame on, so float
    rounding of wall-clock arrivals cannot invent underruns.
    """
    if replica_id is None or not chunk_arrival_times_s:
        return
    if len(chunk_arrival_times_s) != len(chunk_bytes):
        return
    max_underrun, _events, continuous = _native.continuity_stats(
        chunk_arrival_times_s, chunk_bytes, int(sample_rate), 2, int(channels), float(threshold_s)
    )
    stage, replica = str(stage_id), str(replica_id)
    mod_metrics.observe_audio_underrun(stage, replica, max(max_underrun, 0.0))
    if continuous:
        mod_metrics.inc_audio_continuity_ok(stage, replica, int(threshold_s * 1000))
