#!/usr/bin/env python3
"""Writes the Grafana dashboards in this folder from the panel lists below (one place for every
query); run it after editing, and commit the JSON it writes:

    /usr/bin/python3 deploy/grafana/generate.py

  vllm-omni.json          the vllm_omni:* catalog: pipeline, stages, audio SLOs, speech streams,
                          transfers, image/diffusion, realtime VAD, full-duplex sessions
  deployment-metrics.json the engine and router series the deployment metrics read (vLLM, SGLang,
                          llm-d router, vLLM router, SGLang gateway), per namespace and Pod

Queries use the `$model`, `$namespace` and `$pod` variables and `$__rate_interval`;
tests/deploy/test_rules_and_dashboards.py evaluates every one against a real Prometheus scraping
the demo's simulators and requires data.
"""

import json
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
RATE = "$__rate_interval"


def q(quantile, family, by, selector):
    return (f"histogram_quantile({quantile}, sum by (le, {by}) "
            f"(rate({family}_bucket{{{selector}}}[{RATE}])))")


def rate(family, by, selector):
    return f"sum by ({by}) (rate({family}{{{selector}}}[{RATE}]))"


M = 'model_name=~"$model"'
EDGE = "from_stage, from_replica, to_stage, to_replica"
EDGE_LEGEND = "{{from_stage}}.{{from_replica}} -> {{to_stage}}.{{to_replica}}"

OMNI = [
    ("Pipeline", [
        ("Requests running and waiting", "short", [
            (f"sum by (model_name) (vllm_omni:num_requests_running{{{M}}})", "running {{model_name}}"),
            (f"sum by (model_name) (vllm_omni:num_requests_waiting{{{M}}})", "waiting {{model_name}}")]),
        ("End-to-end latency p50 / p90", "s", [
            (q(0.5, "vllm_omni:e2e_request_latency_s", "model_name", M), "p50 {{model_name}}"),
            (q(0.9, "vllm_omni:e2e_request_latency_s", "model_name", M), "p90 {{model_name}}")]),
        ("Requests succeeded by finished reason", "reqps", [
            (rate("vllm_omni:requests_success_total", "finished_reason", M), "{{finished_reason}}")]),
        ("Requests failed by reason", "reqps", [
            (rate("vllm_omni:requests_failed_total", "reason", M), "{{reason}}")]),
        ("Tokens per second", "short", [
            (rate("vllm_omni:prompt_tokens_total", "model_name", M), "prompt {{model_name}}"),
            (rate("vllm_omni:generation_tokens_total", "model_name", M), "generation {{model_name}}")]),
    ]),
    ("Stages", [
        ("Stage generation time p90", "s", [
            (q(0.9, "vllm_omni:stage_gen_time_s", "stage", M), "stage {{stage}}")]),
        ("Stage waiting requests", "short", [
            (f"sum by (stage) (vllm_omni:stage_waiting_requests{{{M}}})", "stage {{stage}}")]),
        ("Stage queue time p90", "s", [
            (q(0.9, "vllm_omni:stage_in_queue_s", "stage", M), "stage {{stage}}")]),
        ("Request queue wait p90", "s", [
            (q(0.9, "vllm_omni:request_queue_wait_s", "model_name", M), "{{model_name}}")]),
        ("Requests running per stage replica (engines)", "short", [
            (f"sum by (stage, replica) (vllm:num_requests_running{{{M}}})", "{{stage}}.{{replica}}")]),
    ]),
    ("Audio", [
        ("Time to first audio packet p90", "s", [
            (q(0.9, "vllm_omni:audio_ttfp_s", "stage, replica", M), "{{stage}}.{{replica}}")]),
        ("Real-time factor p90 (SLO < 1)", "none", [
            (q(0.9, "vllm_omni:audio_rtf", "stage, replica", M), "{{stage}}.{{replica}}")]),
        ("Worst underrun p99", "s", [
            (q(0.99, "vllm_omni:audio_underrun_s", "stage, replica", M), "{{stage}}.{{replica}}")]),
        ("Continuity-ok ratio", "percentunit", [
            (f"{rate('vllm_omni:audio_continuity_ok_total', 'stage, replica', M)} / "
             f"{rate('vllm_omni:audio_underrun_s_count', 'stage, replica', M)}",
             "{{stage}}.{{replica}}")]),
        ("Audio duration p50", "s", [
            (q(0.5, "vllm_omni:audio_duration_s", "stage, replica", M), "{{stage}}.{{replica}}")]),
        ("Audio frames per second", "short", [
            (rate("vllm_omni:audio_frames_total", "stage, replica", M), "{{stage}}.{{replica}}")]),
        ("Skipped audio requests (silent loss) by reason", "reqps", [
            (rate("vllm_omni:audio_skipped_requests_total", "reason", M), "{{reason}}")]),
    ]),
    ("Speech streams", [
        ("Stream interruption ratio", "percentunit", [
            (f"sum by (model_name) (rate(vllm_omni:speech_stream_aborted_total{{{M}}}[{RATE}])) / "
             f"(sum by (model_name) (rate(vllm_omni:speech_stream_aborted_total{{{M}}}[{RATE}])) + "
             f"sum by (model_name) (rate(vllm_omni:speech_stream_completed_total{{{M}}}[{RATE}])))",
             "{{model_name}}")]),
        ("Streams aborted by reason", "short", [
            (rate("vllm_omni:speech_stream_aborted_total", "reason", M), "{{reason}}")]),
    ]),
    ("Transfers", [
        ("Transfer in flight p90", "s", [(q(0.9, "vllm_omni:transfer_in_flight_s", EDGE, M), EDGE_LEGEND)]),
        ("Transfer size p50", "bytes", [(q(0.5, "vllm_omni:transfer_size_bytes", EDGE, M), EDGE_LEGEND)]),
        ("Transfer send / receive p90", "s", [
            (q(0.9, "vllm_omni:transfer_tx_s", EDGE, M), "tx " + EDGE_LEGEND),
            (q(0.9, "vllm_omni:transfer_rx_s", EDGE, M), "rx " + EDGE_LEGEND)]),
        ("KV-transfer wait p90", "s", [(q(0.9, "vllm_omni:kv_wait_s", "model_name", M), "{{model_name}}")]),
    ]),
    ("Image and diffusion", [
        ("Time to first image p90", "s", [
            (q(0.9, "vllm_omni:image_ttfp_s", "stage, replica", M), "{{stage}}.{{replica}}")]),
        ("Images per second", "short", [(rate("vllm_omni:image_count_total", "model_name", M), "{{model_name}}")]),
        ("Diffusion execution p90", "s", [
            (q(0.9, "vllm_omni:diffusion_exec_s", "model_name", M), "exec"),
            (q(0.9, "vllm_omni:diffusion_forward_s", "model_name", M), "forward"),
            (q(0.9, "vllm_omni:vae_decode_s", "model_name", M), "VAE decode")]),
        ("Denoise step latency p90", "s", [
            (q(0.9, "vllm_omni:denoise_step_latency_s", "stage, replica", M), "{{stage}}.{{replica}}")]),
        ("Inference steps p50", "short", [
            (q(0.5, "vllm_omni:num_inference_steps", "model_name", M), "{{model_name}}")]),
        ("Peak memory", "decmbytes", [(f"max by (stage) (vllm_omni:peak_memory_mb{{{M}}})", "stage {{stage}}")]),
    ]),
    ("Realtime VAD", [
        ("Active sessions", "short", [(f"sum (vllm_omni:realtime_vad_active_sessions{{{M}}})", "sessions")]),
        ("VAD inference and endpoint delay p90", "s", [
            (q(0.9, "vllm_omni:realtime_vad_inference_latency_s", "model_name", M), "inference"),
            (q(0.9, "vllm_omni:realtime_vad_endpoint_delay_s", "model_name", M), "endpoint delay")]),
        ("VAD errors by reason", "short", [(rate("vllm_omni:realtime_vad_errors_total", "reason", M), "{{reason}}")]),
    ]),
    ("Full-duplex sessions", [
        ("Sessions by state", "short", [(f"sum by (state) (vllm_omni:duplex_sessions{{{M}}})", "{{state}}")]),
        ("Appends per second by outcome", "short", [
            (rate("vllm_omni:duplex_append_requests_total", "outcome", M), "{{outcome}}")]),
        ("Append latency and control-tail wait p90", "s", [
            (q(0.9, "vllm_omni:duplex_append_latency_s", "model_name", M), "append"),
            (q(0.9, "vllm_omni:duplex_control_queue_wait_s", "operation", M), "wait {{operation}}")]),
        ("Largest context utilization", "percentunit", [
            (f"max by (model_name) (vllm_omni:duplex_context_utilization{{{M}}})", "{{model_name}}")]),
        ("KV rebuilds and affinity losses per second", "short", [
            (rate("vllm_omni:duplex_kv_rebuilds_total", "reason, outcome", M), "{{reason}} {{outcome}}"),
            (rate("vllm_omni:duplex_replica_affinity_loss_total", "model_name", M), "affinity lost")]),
    ]),
]

P = 'namespace=~"$namespace", pod=~"$pod"'
DEPLOYMENT = [
    ("vLLM engines", [
        ("Requests running and waiting", "short", [
            (f"sum by (pod) (vllm:num_requests_running{{{P}}})", "running {{pod}}"),
            (f"sum by (pod) (vllm:num_requests_waiting{{{P}}})", "waiting {{pod}}")]),
        ("TTFT / TPOT / ITL p90", "s", [
            (q(0.9, "vllm:time_to_first_token_seconds", "pod", P), "TTFT {{pod}}"),
            (q(0.9, "vllm:request_time_per_output_token_seconds", "pod", P), "TPOT {{pod}}"),
            (q(0.9, "vllm:inter_token_latency_seconds", "pod", P), "ITL {{pod}}")]),
        ("Prefix cache hit rate (local, external)", "percentunit", [
            (f"{rate('vllm:prefix_cache_hits_total', 'pod', P)} / {rate('vllm:prefix_cache_queries_total', 'pod', P)}",
             "local {{pod}}"),
            (f"{rate('vllm:external_prefix_cache_hits_total', 'pod', P)} / "
             f"{rate('vllm:external_prefix_cache_queries_total', 'pod', P)}", "external {{pod}}")]),
        # Each engine (DP rank) has its own cache: a Pod's share is their mean.
        ("KV-cache usage", "percentunit", [
            (f"avg by (pod) (vllm:kv_cache_usage_perc{{{P}}})", "{{pod}}")]),
    ]),
    ("SGLang engines", [
        ("Requests running and queued", "short", [
            (f"sum by (pod) (sglang:num_running_reqs{{{P}}})", "running {{pod}}"),
            (f"sum by (pod) (sglang:num_queue_reqs{{{P}}})", "queued {{pod}}")]),
        ("TTFT / ITL p90", "s", [
            (q(0.9, "sglang:time_to_first_token_seconds", "pod", P), "TTFT {{pod}}"),
            (q(0.9, "sglang:inter_token_latency_seconds", "pod", P), "ITL {{pod}}")]),
        ("Cache hits by tier (of prefill tokens)", "percentunit", [
            (f'sum by (pod, mode) (rate(sglang:prefill_effective_tokens_total{{{P}, mode=~".+_hit"}}[{RATE}])) '
             f'/ on (pod) group_left () sum by (pod) (rate(sglang:prefill_effective_tokens_total{{{P}}}[{RATE}]))',
             "{{mode}} {{pod}}")]),
        ("KV-cache (token pool) usage", "percentunit", [
            (f"avg by (pod) (sglang:token_usage{{{P}}})", "{{pod}}")]),
    ]),
    ("Routers", [
        ("llm-d router requests and errors", "reqps", [
            (rate("llm_d_epp_request_total", "pod", P), "requests {{pod}}"),
            (rate("llm_d_epp_request_error_total", "pod", P), "errors {{pod}}")]),
        ("llm-d router running requests and ready endpoints", "short", [
            (f"sum by (pod) (llm_d_epp_request_running{{{P}}})", "running {{pod}}"),
            (f"sum by (pod) (llm_d_epp_ready_endpoints{{{P}}})", "ready endpoints {{pod}}")]),
        ("llm-d router TTFT p90", "s", [(q(0.9, "llm_d_epp_request_ttft_seconds", "pod", P), "{{pod}}")]),
        ("vLLM router requests", "reqps", [(rate("vllm_router_requests_total", "pod", P), "{{pod}}")]),
        ("vLLM router running requests and workers", "short", [
            (f"sum by (pod) (vllm_router_running_requests{{{P}}})", "running {{pod}}"),
            (f"sum by (pod) (vllm_router_active_workers{{{P}}})", "workers {{pod}}")]),
        ("SGLang gateway requests and 5xx", "reqps", [
            (rate("smg_router_requests_total", "pod", P), "requests {{pod}}"),
            (f'sum by (pod) (rate(smg_http_responses_total{{{P}, status_code=~"5.."}}[{RATE}]))', "5xx {{pod}}")]),
        ("SGLang gateway active requests and pool", "short", [
            (f"sum by (pod) (smg_worker_requests_active{{{P}}})", "active {{pod}}"),
            (f"sum by (pod) (smg_worker_pool_size{{{P}}})", "pool {{pod}}")]),
    ]),
    # The aggregated API server itself (modelmetrics serve's own /metrics).
    ("modelmetrics aggregated API", [
        ("API requests by path and code", "reqps", [
            (f"sum by (path, code) (rate(modelmetrics_apiserver_requests_total[{RATE}]))",
             "{{path}} {{code}}")]),
        ("API request latency p90 by path", "s", [
            (f"histogram_quantile(0.9, sum by (le, path) "
             f"(rate(modelmetrics_apiserver_request_duration_seconds_bucket[{RATE}])))",
             "{{path}}")]),
        ("Requests in flight", "short", [
            ("sum (modelmetrics_apiserver_requests_in_flight)", "in flight")]),
    ]),
]


def variable(name, query, label):
    return {"name": name, "label": label, "type": "query",
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "query": {"query": query, "refId": name}, "definition": query,
            "includeAll": True, "multi": True, "allValue": ".*",
            "current": {"selected": True, "text": "All", "value": "$__all"}, "refresh": 2, "sort": 1}


def dashboard(uid, title, description, rows, variables):
    panels, y, panel_id = [], 0, 1
    for row_title, row_panels in rows:
        panels.append({"type": "row", "title": row_title, "id": panel_id, "collapsed": False,
                       "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}, "panels": []})
        panel_id += 1
        y += 1
        for i, (title, unit, targets) in enumerate(row_panels):
            panels.append({
                "type": "timeseries", "title": title, "id": panel_id,
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "gridPos": {"h": 8, "w": 8, "x": 8 * (i % 3), "y": y + 8 * (i // 3)},
                "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
                "options": {"legend": {"displayMode": "list", "placement": "bottom"},
                            "tooltip": {"mode": "multi"}},
                "targets": [{"refId": chr(ord("A") + j), "expr": expr, "legendFormat": legend,
                             "datasource": {"type": "prometheus", "uid": "${datasource}"}}
                            for j, (expr, legend) in enumerate(targets)]})
            panel_id += 1
        y += 8 * ((len(row_panels) + 2) // 3)
    return {
        "uid": uid, "title": title, "description": description, "tags": ["modelmetrics", "vllm-omni"],
        "schemaVersion": 38, "version": 1, "editable": True, "timezone": "browser",
        "time": {"from": "now-1h", "to": "now"}, "refresh": "30s",
        "templating": {"list": [{"name": "datasource", "label": "Prometheus", "type": "datasource",
                                 "query": "prometheus", "current": {}}] + variables},
        "annotations": {"list": []}, "panels": panels,
    }


def main():
    omni = dashboard("modelmetrics-vllm-omni", "vLLM-Omni pipelines",
                     "The vllm_omni:* catalog of a vLLM-Omni deployment (modelmetrics deploy/grafana).",
                     OMNI, [variable("model", "label_values(vllm_omni:e2e_request_latency_s_count, model_name)", "Model")])
    deployment = dashboard(
        "modelmetrics-deployment-sources", "Model deployment sources",
        "The engine and router series ModelDeploymentMetrics reads, per Pod (modelmetrics deploy/grafana).",
        DEPLOYMENT, [variable("namespace", "label_values(up, namespace)", "Namespace"),
                     variable("pod", 'label_values(up{namespace=~"$namespace"}, pod)', "Pod")])
    for name, board in (("vllm-omni.json", omni), ("deployment-metrics.json", deployment)):
        (HERE / name).write_text(json.dumps(board, indent=2) + "\n")


if __name__ == "__main__":
    main()
