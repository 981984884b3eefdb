"""A FastAPI service that records a simulated vLLM-Omni speech workload through modelmetrics'
drop-in for ``vllm_omni.metrics`` and serves it on ``/metrics``.

Run it (needs fastapi, uvicorn and prometheus_client; on Debian: python3-fastapi,
python3-uvicorn, python3-prometheus-client)::

    python examples/vllm_omni_fastapi.py --host 127.0.0.1 --port 8000 --rate 2
    curl -s http://127.0.0.1:8000/metrics | grep '^vllm_omni:audio_rtf'
    curl -s http://127.0.0.1:8000/healthz

``--rate`` (default: ``$MODELMETRICS_EXAMPLE_RATE``, else 2) is the mean number of simulated
requests per second; ``--seed`` fixes the random workload. The app also runs under
``uvicorn examples.vllm_omni_fastapi:app``, taking its rate from the environment.

What it shows:

* The drop-in is used the way an existing vLLM-Omni deployment uses it: ``install()`` first,
  then the upstream imports (``from vllm_omni.metrics.prometheus import ...``), which resolve to
  modelmetrics' C++-backed classes with upstream's constructors and methods.
* ``/metrics`` is prometheus_client's own ``make_asgi_app()``: the ``vllm_omni:*`` families come
  out of prometheus_client's default ``REGISTRY`` (through the collector modelmetrics registers
  there), next to prometheus_client's ``process_*`` and ``python_*`` families, in the text or
  OpenMetrics format the scraper asks for.
* A background task plays a Poisson stream of speech requests through a three-stage pipeline,
  thinker (stage 0, text) -> talker (stage 1, codec codes) -> code2wav (stage 2, PCM), with two
  replicas per stage, and records what vLLM-Omni records for them: request gauges, successes and
  failures, tokens, per-stage generation time, audio time-to-first-packet, frames, duration and
  real-time factor, the player simulation of each streamed response (underrun, continuity),
  completed and aborted speech streams, and every cross-stage transfer hop.

Stage durations are drawn from a seeded RNG and then actually slept, so the timestamps handed
to the helpers (request arrival, first packet, chunk arrivals) are real wall-clock times. The RTF
is drawn between 0.3 and 1.5, so some streams are slower than real time and the player
underruns: try ``histogram_quantile(0.9, sum by (le) (rate(vllm_omni:audio_rtf_bucket[1m])))``
or ``rate(vllm_omni:audio_continuity_ok_total[1m])`` in Prometheus.
"""

import argparse
import asyncio
import math
import os
import random
import re
import time
from dataclasses import dataclass

import modelmetrics.vllm_omni

# Before anything imports vllm_omni.metrics, so every later import gets the drop-in.
modelmetrics.vllm_omni.install()

from fastapi import FastAPI  # noqa: E402
from prometheus_client import make_asgi_app  # noqa: E402
from starlette.routing import Mount  # noqa: E402

from vllm_omni.metrics.modality import (  # noqa: E402
    OmniModalityMetrics,
    observe_audio_first_packet,
    observe_audio_streaming_finalize,
)
from vllm_omni.metrics.prometheus import OmniPrometheusMetrics  # noqa: E402
from vllm_omni.metrics.transfer import OmniTransferMetrics  # noqa: E402

MODEL = "Qwen/Qwen3-Omni-30B-A3B-Instruct"
THINKER, TALKER, CODE2WAV = 0, 1, 2
REPLICAS = 2  # per stage
SAMPLE_RATE = 24000  # mono 16-bit PCM, vLLM-Omni's default speech format
CHUNK_S = 0.4  # audio per streamed chunk
RTF_LOW, RTF_MODE, RTF_HIGH = 0.3, 0.6, 1.5  # most streams faster than real time, a tail slower
ABORT_PROBABILITY = 0.04
RATE_ENV = "MODELMETRICS_EXAMPLE_RATE"


@dataclass
class SpeechRequest:
    """One request's workload, drawn up front so a seed fixes the whole stream."""

    prompt_tokens: int
    text_tokens: int
    queue_wait_s: float
    thinker_s: float
    chunk_audio_s: list  # audio in each streamed chunk
    chunk_gen_s: list  # talker + code2wav time to produce it; sums to rtf * audio duration
    replicas: tuple  # the replica serving each stage
    link_latency_s: float  # in-flight time of this request's transfers
    finished_reason: str = "stop"
    abort_after_chunk: int | None = None  # a client that disconnects mid-stream
    abort_reason: str = "cancelled"


def draw_request(rng: random.Random) -> SpeechRequest:
    audio_s = rng.uniform(1.0, 5.0)
    n_chunks = math.ceil(audio_s / CHUNK_S)
    chunk_audio_s = [CHUNK_S] * (n_chunks - 1) + [audio_s - CHUNK_S * (n_chunks - 1)]
    rtf = rng.triangular(RTF_LOW, RTF_HIGH, RTF_MODE)
    # Chunks take uneven time (jitter), but the whole response keeps the drawn RTF.
    weights = [a * rng.uniform(0.7, 1.3) for a in chunk_audio_s]
    chunk_gen_s = [rtf * audio_s * w / sum(weights) for w in weights]
    aborts = rng.random() < ABORT_PROBABILITY
    return SpeechRequest(
        prompt_tokens=rng.randint(20, 400),
        text_tokens=rng.randint(10, 120),
        queue_wait_s=rng.expovariate(1 / 0.03),
        thinker_s=rng.uniform(0.05, 0.3),
        chunk_audio_s=chunk_audio_s,
        chunk_gen_s=chunk_gen_s,
        replicas=tuple(rng.randrange(REPLICAS) for _ in range(3)),
        link_latency_s=rng.uniform(50e-6, 2e-3),
        finished_reason="length" if rng.random() < 0.05 else "stop",
        abort_after_chunk=rng.randrange(n_chunks) if aborts else None,
        abort_reason=rng.choice(["cancelled", "closed"]),
    )


class SpeechSimulator:
    """Plays requests through the pipeline and records them as vLLM-Omni does."""

    def __init__(self, rate: float, seed: int):
        self.rate = rate
        self.rng = random.Random(seed)
        # log_stats=True is what `--log-stats` gives a vLLM-Omni server.
        self.prom = OmniPrometheusMetrics(model_name=MODEL, log_stats=True)
        self.mod = OmniModalityMetrics(model_name=MODEL, log_stats=True)
        self.transfer = OmniTransferMetrics(model_name=MODEL, log_stats=True)
        self.waiting = 0
        self.running = 0
        self.started = 0
        self.tasks = set()

    def publish_gauges(self):
        self.prom.set_waiting(self.waiting)
        self.prom.set_running(self.running)

    def hop(self, req, from_stage, to_stage, size_bytes):
        """One cross-stage transfer, timed as a shared-memory connector of a few GB/s would be."""
        edge = (from_stage, req.replicas[from_stage], to_stage, req.replicas[to_stage])
        tx_s = 20e-6 + size_bytes / 4e9
        self.transfer.observe_size(*edge, size_bytes)
        self.transfer.observe_tx_time(*edge, tx_s)
        self.transfer.observe_in_flight_time(*edge, req.link_latency_s)
        self.transfer.observe_rx_time(*edge, 0.8 * tx_s)

    async def serve(self, req: SpeechRequest):
        arrival_ts = time.time()
        r_code2wav = req.replicas[CODE2WAV]
        self.waiting += 1
        self.publish_gauges()
        await asyncio.sleep(req.queue_wait_s)
        self.prom.observe_queue_wait(req.queue_wait_s)
        self.waiting -= 1
        self.running += 1
        self.publish_gauges()
        try:
            await asyncio.sleep(req.thinker_s)
            self.prom.observe_stage_gen_time(THINKER, "llm", req.thinker_s)
            # Thinker hidden states for the talker: prompt+text positions x 2048 dims x bf16.
            self.hop(req, THINKER, TALKER, (req.prompt_tokens + req.text_tokens) * 4096)

            # Talker and code2wav stream the audio chunk by chunk; their generation time is the
            # RTF times the audio produced (talker 60 %, code2wav 40 %).
            arrivals, sizes = [], []
            for i, (chunk_s, gen_s) in enumerate(zip(req.chunk_audio_s, req.chunk_gen_s)):
                await asyncio.sleep(gen_s)
                # 16 codebooks of int32 codes at 12.5 Hz go from talker to code2wav per chunk.
                self.hop(req, TALKER, CODE2WAV, int(chunk_s * 12.5) * 16 * 4 + 64)
                if i == 0:
                    observe_audio_first_packet(
                        self.mod,
                        stage_id=CODE2WAV,
                        replica_id=r_code2wav,
                        arrival_ts=arrival_ts,
                        now_ts=time.time(),
                    )
                arrivals.append(time.monotonic())
                sizes.append(int(chunk_s * SAMPLE_RATE) * 2)
                if req.abort_after_chunk == i:
                    # The client went away: the abort bucket of requests_success_total, the
                    # failure reason, and the Speech stream's own abort counter.
                    self.prom.request_failed()
                    self.prom.inc_requests_failed("client_disconnect")
                    self.mod.inc_speech_stream_aborted(req.abort_reason)
                    return

            generated_s = sum(req.chunk_gen_s)
            self.prom.observe_stage_gen_time(TALKER, "llm", 0.6 * generated_s)
            self.prom.observe_stage_gen_time(CODE2WAV, "llm", 0.4 * generated_s)
            # The listener's player, fed the chunks as they arrived: a stream slower than real
            # time underruns and misses continuity_ok.
            observe_audio_streaming_finalize(
                self.mod,
                stage_id=CODE2WAV,
                replica_id=r_code2wav,
                chunk_arrival_times_s=arrivals,
                chunk_bytes=sizes,
                sample_rate=SAMPLE_RATE,
            )
            stage, replica = str(CODE2WAV), str(r_code2wav)
            frames = sum(sizes) // 2
            self.mod.inc_audio_frames(stage, replica, frames)
            self.mod.observe_audio_duration(stage, replica, frames / SAMPLE_RATE)
            self.mod.observe_audio_rtf(stage, replica, generated_s / (frames / SAMPLE_RATE))
            self.mod.inc_speech_stream_completed()
            codec_tokens = int(frames / SAMPLE_RATE * 12.5) * 16
            self.prom.observe_tokens(req.prompt_tokens, req.text_tokens + codec_tokens)
            self.prom.request_succeeded(time.time() - arrival_ts, req.finished_reason)
        finally:
            self.running -= 1
            self.publish_gauges()

    async def run(self):
        """Poisson arrivals at `rate` per second, each request served concurrently."""
        self.publish_gauges()
        while True:
            await asyncio.sleep(self.rng.expovariate(self.rate))
            task = asyncio.create_task(self.serve(draw_request(self.rng)))
            self.started += 1
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def stop(self):
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


app = FastAPI(title="vLLM-Omni metrics example (modelmetrics)")
app.state.rate = float(os.environ.get(RATE_ENV, "2"))
app.state.seed = 0

# vLLM's way of mounting /metrics: a Mount whose regex also matches "/metrics" itself, so
# scrapers get 200 instead of Starlette's redirect to "/metrics/".
_metrics = Mount("/metrics", make_asgi_app())
_metrics.path_regex = re.compile("^/metrics(?P<path>.*)$")
app.routes.append(_metrics)


# FastAPI 0.92 (Debian 12) predates the `lifespan=` argument; newer versions still accept this.
@app.on_event("startup")
async def start_simulation():
    app.state.simulator = SpeechSimulator(app.state.rate, app.state.seed)
    app.state.simulation = asyncio.create_task(app.state.simulator.run())


@app.on_event("shutdown")
async def stop_simulation():
    app.state.simulation.cancel()
    await asyncio.gather(app.state.simulation, return_exceptions=True)
    await app.state.simulator.stop()


@app.get("/healthz")
async def healthz():
    sim = app.state.simulator
    return {"status": "ok", "requests_started": sim.started, "running": sim.running}


def main():
    import uvicorn

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default: loopback only)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--rate", type=float, default=app.state.rate,
                        help=f"simulated requests per second (default: ${RATE_ENV} or 2)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the simulated workload")
    args = parser.parse_args()
    if not args.rate > 0:
        parser.error("--rate must be > 0")
    app.state.rate, app.state.seed = args.rate, args.seed
    uvicorn.run(app, host=args.host, port=args.port)


if __name__ == "__main__":
    main()
