"""create_metric_per_engine, as vLLM's loggers and helpers share it."""


def create_metric_per_engine(metric, per_engine_labelvalues):
    """{engine index: metric.labels(*labelvalues)}."""
    return {idx: metric.labels(*values) for idx, values in per_engine_labelvalues.items()}
