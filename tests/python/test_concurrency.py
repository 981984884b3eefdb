"""Concurrency: N Python threads x M observations on shared objects lose no counts, while
another thread renders; a render releases the GIL."""

import threading

from conftest import exposition, run_isolated, sample

import modelmetrics
from modelmetrics.vllm_omni.metrics.modality import OmniModalityMetrics
from modelmetrics.vllm_omni.metrics.prometheus import OmniPrometheusMetrics
from modelmetrics.vllm_omni.metrics.transfer import OmniTransferMetrics

THREADS, EACH = 8, 20000


def test_threads_lose_no_counts_while_rendering(model):
    p, m, t = OmniPrometheusMetrics(model), OmniModalityMetrics(model), OmniTransferMetrics(model)
    stop = threading.Event()
    renders = []

    def render_loop():
        while not stop.is_set():
            renders.append(len(modelmetrics.render()))

    def work(i):
        stage = str(i % 2)
        for _ in range(EACH):
            p.request_succeeded(0.5)
            p.observe_tokens(2, 3)
            m.inc_audio_frames(stage, "0", 10)
            m.observe_audio_rtf(stage, "0", 0.5)
            t.observe_tx_time(0, 0, 1, i % 3, 0.001)

    renderer = threading.Thread(target=render_loop)
    renderer.start()
    workers = [threading.Thread(target=work, args=(i,)) for i in range(THREADS)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    stop.set()
    renderer.join()
    total = THREADS * EACH
    text = exposition()
    ok = f'vllm_omni:requests_success_total{{finished_reason="stop",model_name="{model}"}}'
    assert sample(text, ok) == total
    assert sample(text, f'vllm_omni:e2e_request_latency_s_count{{model_name="{model}"}}') == total
    assert sample(text, f'vllm_omni:e2e_request_latency_s_sum{{model_name="{model}"}}') == total * 0.5
    assert sample(text, f'vllm_omni:prompt_tokens_total{{model_name="{model}"}}') == 2 * total
    assert sample(text, f'vllm_omni:generation_tokens_total{{model_name="{model}"}}') == 3 * total
    frames = sum(sample(text, f'vllm_omni:audio_frames_total{{model_name="{model}",replica="0",stage="{s}"}}')
                 for s in ("0", "1"))
    assert frames == 10 * total
    rtf = sum(sample(text, f'vllm_omni:audio_rtf_count{{model_name="{model}",replica="0",stage="{s}"}}')
              for s in ("0", "1"))
    assert rtf == total
    tx = sum(sample(text, f'vllm_omni:transfer_tx_s_count{{from_replica="0",from_stage="0",model_name="{model}",to_replica="{r}",to_stage="1"}}')
             for r in ("0", "1", "2"))
    assert tx == total
    assert renders  # the renderer ran concurrently


def test_render_releases_the_gil():
    # Many series make a render take a while; a Python thread must keep running meanwhile.
    result = run_isolated("""
        import threading
        import modelmetrics
        from modelmetrics.vllm_omni.metrics.modality import OmniModalityMetrics
        m = OmniModalityMetrics("m")
        for stage in range(300):
            for replica in range(10):
                m.observe_audio_rtf(str(stage), str(replica), 0.5)
        ticks, stop = [], threading.Event()
        def ticker():
            while not stop.is_set():
                ticks.append(1)
        thread = threading.Thread(target=ticker)
        thread.start()
        for _ in range(5):
            modelmetrics.render()
        stop.set()
        thread.join()
        assert ticks
        print("ok")
    """)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
