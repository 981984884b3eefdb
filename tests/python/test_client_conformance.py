"""modelmetrics.prometheus_client against prometheus_client: the same calls on both must print
byte-identical exposition (through modelmetrics' native generate_latest and through
prometheus_client's own writer over the same registry) and raise the same exceptions."""

import math
import unittest.mock as mock

import prometheus_client as pc
import pytest
from prometheus_client.openmetrics import exposition as om

import modelmetrics
import modelmetrics.prometheus_client as mpc

NOW = 1733280000.125


def both(scenario, **patches):
    """Runs `scenario(module, registry)` on prometheus_client and on modelmetrics with time.time
    fixed; returns their texts (prometheus_client's, modelmetrics' native, modelmetrics' through
    prometheus_client's writer) and OpenMetrics texts."""
    out = []
    for module in (pc, mpc):
        registry = pc.CollectorRegistry()
        with mock.patch("time.time", return_value=NOW):
            scenario(module, registry)
        out.append((module.generate_latest(registry), pc.generate_latest(registry),
                    om.generate_latest(registry)))
    return out


def assert_same(scenario):
    (ref, _, ref_om), (ours, ours_via_pc, ours_om) = both(scenario)
    assert ours.decode() == ref.decode()
    assert ours_via_pc == ref
    assert ours_om.decode() == ref_om.decode()
    return ours.decode()


def counters(m, r):
    c = m.Counter("requests_total", "Requests.", ["method", "code"], namespace="app",
                  subsystem="http", registry=r)
    c.labels("get", 200).inc()
    c.labels(method="post", code="500").inc(2.5)
    c.labels("get", "200").inc(3)
    plain = m.Counter("plain", "No labels.", registry=r)
    plain.inc(0.1)
    plain.inc(0.2)
    plain.inc(1)
    m.Counter("nan", "NaN.", registry=r).inc(float("nan"))
    inf = m.Counter("inf", "Inf.", registry=r)
    inf.inc(float("inf"))
    inf.inc(5)
    m.Counter("big", "Big.", registry=r).inc(12345678.9)
    m.Counter("unused", "Labelled, no child.", ["a"], registry=r)


def gauges(m, r):
    g = m.Gauge("temperature", "T.", ["room"], unit="celsius", registry=r)
    g.labels("a").set(21.5)
    g.labels("b").inc()
    g.labels("b").dec(3)
    g.labels("c").set("4.25")
    g.labels("d").set_to_current_time()
    g.labels("e").set(float("-inf"))
    g.labels("f").set(float("nan"))
    g.labels("g").set(1e-7)
    g.labels("h").set(-12345678.0)
    f = m.Gauge("from_function", "F.", registry=r)
    f.set_function(lambda: 7)
    f.set(1)  # ignored while a function is set, as in prometheus_client
    with m.Gauge("inprogress", "I.", registry=r).track_inprogress():
        pass


def histograms(m, r):
    h = m.Histogram("latency_seconds", "L.", ["route"], registry=r)
    for v in (0.001, 0.3, 7, 100, float("inf"), float("-inf"), float("nan")):
        h.labels("/a").observe(v)
    h.labels(route=3).observe(0.5)
    wide = m.Histogram("tokens", "Tokens.", buckets=[1, 2, 5, 1e7, 1.5e8, 2.5e10], registry=r)
    wide.observe(3)
    wide.observe(2e7)
    neg = m.Histogram("delta", "Negative bounds.", buckets=[-1, 0, 1], registry=r)
    neg.observe(-5)
    neg.observe(0.5)
    dup = m.Histogram("dup", "Repeated bound.", buckets=[1, 1, 2], registry=r)
    dup.observe(1)


def lifecycle(m, r):
    c = m.Counter("events", "E.", ["kind"], registry=r)
    old = c.labels("a")
    old.inc(5)
    c.labels("b").inc()
    c.remove("a")
    old.inc()  # a removed child still works, unseen
    c.labels("a").inc(2)
    g = m.Gauge("cleared", "C.", ["k"], registry=r)
    g.labels("x").set(1)
    g.clear()
    g.labels("y").set(2)
    h = m.Histogram("timed_seconds", "T.", registry=r)
    with mock.patch("prometheus_client.context_managers.default_timer", side_effect=[10.0, 10.25]):
        with h.time():
            pass
    errors = m.Counter("errors", "E.", registry=r)
    with pytest.raises(KeyError):
        with errors.count_exceptions(KeyError):
            raise KeyError("x")
    with errors.count_exceptions(KeyError):
        pass


def escapes_and_docs(m, r):
    c = m.Counter("escaped", 'Help with \\ and \n and "quotes".', ["v"], registry=r)
    c.labels('a"b\\c\nd').inc()
    c.labels("über ✓").inc()
    m.Gauge("no_doc", "", registry=r).set(1)
    m.Counter("exemplars", "X.", registry=r).inc(1, {"trace_id": "abc"})
    m.Counter("exemplar_only", "X.", registry=r).inc(exemplar={"trace_id": "ghi"})
    m.Histogram("ex_hist", "X.", buckets=[1, 2], registry=r).observe(1.5, {"trace_id": "def"})


def mixed(m, r):
    m.Counter("first", "1.", registry=r).inc()
    pc.Summary("pc_summary", "A prometheus_client summary.", registry=r).observe(2)
    pc.Info("pc_info", "Info.", registry=r).info({"version": "1"})
    m.Gauge("second", "2.", registry=r).set(2)


@pytest.mark.parametrize("scenario", [counters, gauges, histograms, lifecycle, escapes_and_docs,
                                      mixed])
def test_same_exposition(scenario):
    assert_same(scenario)


def test_scenarios_produce_what_they_claim():
    text = assert_same(histograms)
    assert 'latency_seconds_bucket{le="+Inf",route="/a"} 6.0' in text
    assert 'latency_seconds_count{route="/a"} 6.0' in text  # NaN is in no bucket
    assert 'latency_seconds_sum{route="/a"} NaN' in text
    assert "delta_sum" not in text
    text = assert_same(counters)
    assert 'app_http_requests_total{code="200",method="get"} 4.0' in text
    assert "plain_total 1.3\n" in text
    assert "inf_total +Inf" in text and "nan_total NaN" in text


def test_without_created_series(monkeypatch):
    import prometheus_client.metrics as pcm

    monkeypatch.setattr(pcm, "_use_created", False)
    text = assert_same(counters)
    assert "_created" not in text


def test_mostrecent_is_accepted_whatever_prometheus_client_says():
    g = mpc.Gauge("mr", "M.", ["engine"], multiprocess_mode="mostrecent",
                  registry=pc.CollectorRegistry())
    assert g._multiprocess_mode == "mostrecent"
    assert g.labels("0")._multiprocess_mode == "mostrecent"


def raised(call):
    try:
        call()
    except Exception as e:  # noqa: BLE001 - the exception itself is compared
        return type(e), str(e)
    return None


MISUSE = {
    "negative inc": lambda m, r: m.Counter("c", "d", registry=r).inc(-1),
    "inc on a parent": lambda m, r: m.Counter("c", "d", ["a"], registry=r).inc(),
    "set on a parent": lambda m, r: m.Gauge("g", "d", ["a"], registry=r).set(1),
    "observe on a parent": lambda m, r: m.Histogram("h", "d", ["a"], registry=r).observe(1),
    "set_function on a parent": lambda m, r: m.Gauge("g", "d", ["a"], registry=r).set_function(int),
    "too few labels": lambda m, r: m.Counter("c", "d", ["a", "b"], registry=r).labels("x"),
    "too many labels": lambda m, r: m.Counter("c", "d", ["a"], registry=r).labels("x", "y"),
    "wrong label names": lambda m, r: m.Counter("c", "d", ["a"], registry=r).labels(b="x"),
    "args and kwargs": lambda m, r: m.Counter("c", "d", ["a", "b"], registry=r).labels("x", b="y"),
    "labels without labelnames": lambda m, r: m.Counter("c", "d", registry=r).labels("x"),
    "chained labels": lambda m, r: m.Counter("c", "d", ["a"], registry=r).labels("x").labels("y"),
    "remove count": lambda m, r: m.Counter("c", "d", ["a"], registry=r).remove("x", "y"),
    "remove missing": lambda m, r: m.Counter("c", "d", ["a"], registry=r).remove("x"),
    "remove unlabelled": lambda m, r: m.Counter("c", "d", registry=r).remove("x"),
    "duplicate": lambda m, r: (m.Counter("c", "d", registry=r), m.Gauge("c_total", "d", registry=r)),
    "invalid name": lambda m, r: m.Counter("0c", "d", registry=r),
    "invalid label": lambda m, r: m.Counter("c", "d", ["a-b"], registry=r),
    "reserved label": lambda m, r: m.Counter("c", "d", ["__a"], registry=r),
    "le on a histogram": lambda m, r: m.Histogram("h", "d", ["le"], registry=r),
    "unsorted buckets": lambda m, r: m.Histogram("h", "d", buckets=[2, 1], registry=r),
    "one bucket": lambda m, r: m.Histogram("h", "d", buckets=[float("inf")], registry=r),
    "bad bucket": lambda m, r: m.Histogram("h", "d", buckets=["x"], registry=r),
    "bad mode": lambda m, r: m.Gauge("g", "d", multiprocess_mode="bogus", registry=r),
    "bad exemplar": lambda m, r: m.Counter("c", "d", registry=r).inc(1, {"a-b": "x"}),
}


@pytest.mark.parametrize("case", sorted(MISUSE))
def test_same_exceptions(case):
    ref = raised(lambda: MISUSE[case](pc, pc.CollectorRegistry()))
    ours = raised(lambda: MISUSE[case](mpc, pc.CollectorRegistry()))
    assert ref is not None
    assert ours == ref


@pytest.mark.parametrize("value", ["x", None])
def test_non_numbers_raise_type_error(value):
    g = mpc.Gauge("g", "d", registry=pc.CollectorRegistry())
    for call in (lambda: mpc.Counter("c", "d", registry=pc.CollectorRegistry()).inc(value),
                 lambda: mpc.Histogram("h", "d", registry=pc.CollectorRegistry()).observe(value),
                 lambda: g.inc(value)):
        with pytest.raises(TypeError):
            call()


def test_subclass_children_are_the_subclass_and_see_their_init():
    seen = []

    class Relabel(mpc.Gauge):
        def __init__(self, *args, **kwargs):
            names = kwargs.get("labelnames")
            if names is not None and "engine" in names:
                kwargs["labelnames"] = [n for n in names if n != "engine"] + ["stage"]
            seen.append(kwargs.get("_labelvalues"))
            super().__init__(*args, **kwargs)

        def labels(self, *args, **kwargs):
            if "engine" in kwargs:
                kwargs["stage"] = "s" + str(kwargs.pop("engine"))
            return super().labels(*args, **kwargs)

    r = pc.CollectorRegistry()
    g = Relabel("relabelled", "R.", labelnames=["model", "engine"], registry=r)
    child = g.labels(model="m", engine=1)
    child.set(4)
    assert type(child) is Relabel
    assert g.labels("m", "s1") is child
    assert seen == [None, ("m", "s1")]
    assert 'relabelled{model="m",stage="s1"} 4.0' in mpc.generate_latest(r).decode()


def test_values_read_back_as_prometheus_client_reads_them():
    r = pc.CollectorRegistry()
    c = mpc.Counter("c", "d", ["a"], registry=r)
    c.labels("x").inc(2)
    h = mpc.Histogram("h", "d", buckets=[1, 2], registry=r)
    h.observe(1.5)
    assert c.labels("x")._value.get() == 2.0
    assert h._sum.get() == 1.5 and [b.get() for b in h._buckets] == [0.0, 1.0, 0.0]
    assert r.get_sample_value("c_total", {"a": "x"}) == 2.0
    assert r.get_sample_value("h_bucket", {"le": "2.0"}) == 1.0
    assert math.isclose(r.get_sample_value("c_created", {"a": "x"}), c.labels("x")._created)


def test_default_registry_instruments_are_in_modelmetrics_render():
    g = mpc.Gauge("conformance_render_probe", "Probe.", ["k"])
    try:
        g.labels("v").set(9)
        text = modelmetrics.render().decode()
        assert 'conformance_render_probe{k="v"} 9.0' in text
        om_text = modelmetrics.render(openmetrics=True).decode()
        assert 'conformance_render_probe{k="v"} 9.0' in om_text
        assert om_text.endswith("# EOF\n") and om_text.count("# EOF") == 1
    finally:
        pc.REGISTRY.unregister(g)
    assert "conformance_render_probe" not in modelmetrics.render().decode()


def test_a_label_value_over_the_bound_is_refused_and_nothing_is_recorded():
    r = pc.CollectorRegistry()
    c = mpc.Counter("c", "d", ["a"], registry=r)
    with pytest.raises(ValueError, match="4096-byte bound"):
        c.labels("x" * 5000)
    assert c._metrics == {}
    assert "c_total{" not in mpc.generate_latest(r).decode()


def test_every_value_is_spelled_as_float_to_go_string():
    import random

    from prometheus_client.utils import floatToGoString

    rng = random.Random(21)
    values = [5e12, 1.5e10, 1234567.0, 1e6, 999999.0, -12345678.9, 9.99e15, 1e16, -1e16, 2.0 ** 53,
              1e22, 1e-5, 1e-4, -0.0, 0.0, 3.0]
    values += [rng.uniform(-1, 1) * 10 ** rng.randint(-12, 20) for _ in range(2000)]
    r = pc.CollectorRegistry()
    g = mpc.Gauge("spelled", "S.", ["i"], registry=r)
    for i, v in enumerate(values):
        g.labels(str(i)).set(v)
    lines = mpc.generate_latest(r).decode().splitlines()[2:]
    assert [line.rsplit(" ", 1)[1] for line in lines] == [floatToGoString(v) for v in values]


def test_one_series_behind_two_children_stays_safe_after_remove():
    # A lone surrogate is written escaped, so these two label values name one series; removing
    # one child must not free what the other still writes to (ASan runs this suite too).
    r = pc.CollectorRegistry()
    c = mpc.Counter("surrogate", "S.", ["v"], registry=r)
    first = c.labels("\udc80")
    second = c.labels("\\udc80")
    c.remove("\\udc80")
    del second
    import gc

    gc.collect()
    first.inc()
    c.clear()
    first.inc()
    assert "surrogate_total{" not in mpc.generate_latest(r).decode()


def test_set_function_runs_only_when_its_own_registry_renders():
    calls = []
    mine, other = pc.CollectorRegistry(), pc.CollectorRegistry()
    g = mpc.Gauge("fn", "F.", ["k"], registry=mine)
    g.labels("a").set_function(lambda: calls.append(1) or 5)
    mpc.Gauge("plain", "P.", registry=other).set(1)
    mpc.generate_latest(other)
    assert calls == []
    assert 'fn{k="a"} 5.0' in mpc.generate_latest(mine).decode()
    assert calls == [1]


def test_labels_by_keyword_in_any_order_and_by_number_find_the_same_child():
    # The native fast path (upstream vLLM-Omni passes keywords and int stage ids): each spelling
    # returns the one child prometheus_client's str() keys would, and a wrong call still raises
    # prometheus_client's error.
    for module in (pc, mpc):
        r = pc.CollectorRegistry()
        h = module.Histogram("transfer_s", "T.", ["model_name", "stage", "replica"], registry=r)
        first = h.labels(model_name="m", stage=1, replica=0)
        assert h.labels("m", "1", "0") is first
        assert h.labels(replica="0", stage="1", model_name="m") is first
        assert h.labels("m", 1, 0) is first
        assert h.labels(model_name="m", stage=1.5, replica=0) is h.labels("m", "1.5", "0")
        assert h.labels(model_name="m", stage=True, replica=0) is h.labels("m", "True", "0")
        with pytest.raises(ValueError, match="Incorrect label names"):
            h.labels(model_name="m", stage=1, rep=0)
        with pytest.raises(ValueError, match="Incorrect label count"):
            h.labels("m", 1)
        with pytest.raises(ValueError, match="both"):
            h.labels("m", stage=1, replica=0)


def keyword_labels(m, r):
    c = m.Counter("c", "C.", ["a", "b"], registry=r)
    for _ in range(3):
        c.labels(b=2, a="x").inc()
    c.labels("x", 2).inc(0.5)


def test_keyword_and_number_labels_print_as_prometheus_client_prints_them():
    assert 'c_total{a="x",b="2"} 3.5' in assert_same(keyword_labels)
