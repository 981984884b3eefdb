"""SpecDecodingProm: the speculative-decoding counters, only when it is configured; the
per-position counter takes `labelnames + ["position"]` children by position."""

from dataclasses import dataclass, field

import prometheus_client

from vllm.v1.metrics.utils import create_metric_per_engine


@dataclass
class SpecDecodingStats:
    num_spec_tokens: int = 3
    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    num_accepted_tokens_per_pos: list = field(default_factory=list)


class SpecDecodingProm:
    _counter_cls = prometheus_client.Counter

    def __init__(self, speculative_config, labelnames, per_engine_labelvalues):
        self.spec_decoding_enabled = speculative_config is not None
        if not self.spec_decoding_enabled:
            return

        def counter(name, documentation, names=labelnames):
            return self._counter_cls(name=name, documentation=documentation, labelnames=names)

        self.counter_spec_decode_num_drafts = create_metric_per_engine(
            counter("vllm:spec_decode_num_drafts", "Number of spec decoding drafts."),
            per_engine_labelvalues)
        self.counter_spec_decode_num_draft_tokens = create_metric_per_engine(
            counter("vllm:spec_decode_num_draft_tokens", "Number of draft tokens."),
            per_engine_labelvalues)
        self.counter_spec_decode_num_accepted_tokens = create_metric_per_engine(
            counter("vllm:spec_decode_num_accepted_tokens", "Number of accepted tokens."),
            per_engine_labelvalues)
        per_pos = counter("vllm:spec_decode_num_accepted_tokens_per_pos",
                          "Accepted tokens per draft position.", labelnames + ["position"])
        positions = range(speculative_config.num_speculative_tokens)
        self.counter_spec_decode_num_accepted_tokens_per_pos = {
            idx: [per_pos.labels(*values, str(pos)) for pos in positions]
            for idx, values in per_engine_labelvalues.items()}

    def observe(self, spec_decoding_stats, engine_idx=0):
        if not self.spec_decoding_enabled:
            return
        self.counter_spec_decode_num_drafts[engine_idx].inc(spec_decoding_stats.num_drafts)
        self.counter_spec_decode_num_draft_tokens[engine_idx].inc(
            spec_decoding_stats.num_draft_tokens)
        self.counter_spec_decode_num_accepted_tokens[engine_idx].inc(
            spec_decoding_stats.num_accepted_tokens)
        for pos, counter in enumerate(
                self.counter_spec_decode_num_accepted_tokens_per_pos[engine_idx]):
            counter.inc(spec_decoding_stats.num_accepted_tokens_per_pos[pos])
