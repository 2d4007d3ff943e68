"""The operations files in ``deploy/`` against the metrics a worker really exports.

Every metric the Grafana dashboard and the alert rules query must be a series of a live
worker's ``/metrics`` (a labelled metric with no sample yet still has its ``# TYPE`` line);
a real Prometheus scrapes the worker and evaluates every dashboard query and alert rule;
``promtool`` checks the config, the rules and their unit tests.  Prometheus comes from
Debian's ``prometheus`` package, which ``.ci/run`` installs.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.pipeline import (
    TWO_PATH,
    committed_changes,
    http_get,
    isolated_config,
    wait_committed,
)
from workers import metrics
from workers.config import WorkerConfig
from workers.kafka.broker import free_port
from workers.kafka.clients import QueryAdmin, TxProducer
from workers.runtime.process import WorkerProcess

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS_DIR = ROOT / "deploy" / "prometheus"
ALERTS = PROMETHEUS_DIR / "alerts.yml"
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "deltalog.json"
DATASOURCES = ROOT / "deploy" / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
PROMETHEUS = Path("/usr/bin/prometheus")
PROMTOOL = Path("/usr/bin/promtool")
MISSING_PROMETHEUS = ("Debian's prometheus package is not installed (.ci/run installs it: "
                      "apt-get install --no-install-recommends prometheus)")
WAIT_S = 60.0  # longest a worker or Prometheus may take to show what the test expects
POLL_S = 0.2

# The known stream, one transaction per tick, against TWO_PATH ([?a ?c] with a→b→c):
#   0  1→2                      —
#   1  2→3                      +(1 3)
#   2  3→4                      +(2 4)
#   3  undecodable bytes        dead letter "undecodable"
#   4  retract 2→3, add 1→3     -(1 3) -(2 4) +(1 4)
GOOD = ["[[:db/add 1 :g/to 2]]", "[[:db/add 2 :g/to 3]]", "[[:db/add 3 :g/to 4]]",
        "[[:db/retract 2 :g/to 3] [:db/add 1 :g/to 3]]"]
BAD_AT = 3
ROWS_ADDED, ROWS_REMOVED = 3, 2

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_IDENTIFIER = re.compile(r"(?<![\w$:])[a-zA-Z_:][a-zA-Z0-9_:]*")
_EXPR = re.compile(r"^\s+expr:\s*(.+?)\s*$", re.MULTILINE)
_ALERT = re.compile(r"^\s+- alert:\s*(\S+)\s*$", re.MULTILINE)


# -- the deploy files, read -------------------------------------------------------------------

def _dashboard() -> dict[str, Any]:
    return json.loads(DASHBOARD.read_text())


def _data_panels(dashboard: dict[str, Any]) -> list[dict[str, Any]]:
    """The panels that query (rows only group them)."""
    return [panel for panel in dashboard["panels"] if panel["type"] != "row"]


def _dashboard_exprs() -> list[str]:
    return [target["expr"] for panel in _data_panels(_dashboard()) for target in panel["targets"]]


def _alert_exprs() -> list[str]:
    """The rules' expressions; alerts.yml keeps each on one line (no PyYAML needed)."""
    text = ALERTS.read_text()
    exprs = _EXPR.findall(text)
    assert len(exprs) == len(_ALERT.findall(text)) and not {"|", ">"} & {e[0] for e in exprs}
    return exprs


def _metric_names(expr: str) -> set[str]:
    """Metric names in a PromQL expression: its ``deltalog_*`` identifiers, and ``up``
    (string literals, ``$variables``, functions, labels and keywords left out)."""
    names = _IDENTIFIER.findall(_STRING.sub('""', expr))
    return {name for name in names if name.startswith("deltalog_") or name == "up"}


def _series_names(families: Iterable[Metric]) -> set[str]:
    """The names PromQL can select for these metric families (by type, not by sample, so
    a labelled family with no sample yet counts)."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"),
                "gauge": ("",)}
    return {family.name + suffix for family in families for suffix in suffixes[family.type]}


def _declared() -> list[Metric]:
    """Every family :mod:`workers.metrics` declares."""
    return [family for value in vars(metrics).values() if isinstance(value, MetricWrapperBase)
            for family in value.describe()]


# -- static checks ----------------------------------------------------------------------------

def test_dashboard_panels_all_query_the_provisioned_prometheus() -> None:
    uid = re.search(r"^\s*uid:\s*(\S+)\s*$", DATASOURCES.read_text(), re.MULTILINE)
    assert uid is not None
    source = {"type": "prometheus", "uid": uid.group(1)}
    dashboard = _dashboard()
    panels = _data_panels(dashboard)
    assert len({panel["id"] for panel in dashboard["panels"]}) == len(dashboard["panels"])
    assert [v["name"] for v in dashboard["templating"]["list"]] == ["worker"]
    assert dashboard["templating"]["list"][0]["datasource"] == source
    for panel in panels:
        assert panel["datasource"] == source, panel["title"]
        assert panel["targets"], panel["title"]
        for target in panel["targets"]:
            assert target["datasource"] == source, panel["title"]
            assert target["expr"].strip(), panel["title"]
            assert 'instance=~"$worker"' in target["expr"], (panel["title"], target["expr"])


def test_every_declared_metric_has_a_panel_and_a_readme_row() -> None:
    declared = _declared()
    series = _series_names(declared)
    on_dashboard = {name for expr in _dashboard_exprs() for name in _metric_names(expr)}
    in_alerts = {name for expr in _alert_exprs() for name in _metric_names(expr)}
    assert on_dashboard | in_alerts <= series | {"up"}
    readme = (ROOT / "README.md").read_text()
    for family in declared:
        assert _series_names([family]) & on_dashboard, f"no panel shows {family.name}"
        exposed = family.name + ("_total" if family.type == "counter" else "")
        assert f"| `{exposed}` |" in readme, f"README's metrics table lacks {exposed}"


@pytest.mark.parametrize("args", [("check", "config", "prometheus.yml"),
                                  ("check", "rules", "alerts.yml"),
                                  ("test", "rules", "alerts_test.yml")], ids=" ".join)
def test_promtool_accepts_the_deploy_files(args: tuple[str, ...]) -> None:
    assert PROMTOOL.exists(), MISSING_PROMETHEUS
    result = subprocess.run([str(PROMTOOL), *args], cwd=PROMETHEUS_DIR, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_compose_runs_the_workers_prometheus_scrapes() -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    workers = {name: service for name, service in services.items()
               if name.startswith("worker-")}
    assert len(workers) == 2
    targets = set()
    for name, service in workers.items():
        port = service["environment"]["DELTALOG_METRICS_PORT"]
        targets.add(f"{name}:{port}")
        assert f":{port}/health/ready" in " ".join(service["healthcheck"]["test"]), name
    scrape = yaml.safe_load((PROMETHEUS_DIR / "prometheus.yml").read_text())
    job = next(job for job in scrape["scrape_configs"] if job["job_name"] == "deltalog")
    assert {t for config in job["static_configs"] for t in config["targets"]} == targets
    assert "./deploy/prometheus:/etc/prometheus:ro" in services["prometheus"]["volumes"]
    provider = yaml.safe_load((ROOT / "deploy/grafana/provisioning/dashboards/deltalog.yml")
                              .read_text())["providers"][0]["options"]["path"]
    assert f"./deploy/grafana/dashboards:{provider}:ro" in services["grafana"]["volumes"]
    assert yaml.safe_load(DATASOURCES.read_text())["datasources"][0]["url"] == (
        "http://prometheus:9090")
    compile(services["demo-producer"]["command"][0], "demo-producer", "exec")
    assert {"kafka", "spark-master", "spark-worker"} <= set(services)


# -- a live worker ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Observed:
    """A worker that has applied the known stream, with its metrics port."""

    config: WorkerConfig
    port: int
    worker: WorkerProcess

    def scrape(self) -> str:
        return http_get(f"http://127.0.0.1:{self.port}/metrics")[1].decode()


@pytest.fixture(scope="module")
def observed(kafka_bootstrap: str,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Observed]:
    tmp = tmp_path_factory.mktemp("observed")
    config = isolated_config(kafka_bootstrap)
    QueryAdmin(config).add("paths", TWO_PATH)
    port = free_port()
    worker = WorkerProcess(config, tmp / "snapshots", tmp / "worker.log", tick_max_tx=1,
                           metrics_port=port)
    worker.start()
    try:
        seen = Observed(config, port, worker)
        _until(lambda: "deltalog_queries 1.0" in seen.scrape(),
               "the query registered", worker)
        producer = TxProducer(config)
        for tx in GOOD[:BAD_AT]:
            producer.send(tx)
        producer.send_raw(b"garbage")
        for tx in GOOD[BAD_AT:]:
            producer.send(tx)
        producer.flush()
        wait_committed(config, ["paths"], len(GOOD), worker)
        yield seen
    finally:
        worker.stop()


@pytest.mark.kafka
def test_every_dashboard_and_alert_metric_is_exported_by_a_live_worker(
        observed: Observed) -> None:
    families = list(text_string_to_metric_families(observed.scrape()))
    exported = _series_names(families)
    used = {name for expr in _dashboard_exprs() + _alert_exprs() for name in _metric_names(expr)}
    assert "up" in used  # from Prometheus itself: checked against a real one below
    assert sorted(used - exported - {"up"}) == []
    value = {(s.name, tuple(sorted(s.labels.items()))): s.value
             for family in families for s in family.samples}
    assert value["deltalog_tx_consumed_total", ()] == len(GOOD)
    refused = {k: v for k, v in value.items() if k[0] == "deltalog_tx_refused_total"}
    dead = {k: v for k, v in value.items() if k[0] == "deltalog_dlq_records_total"}
    assert refused == {("deltalog_tx_refused_total", (("code", "undecodable"),)): 1}
    assert dead == {("deltalog_dlq_records_total", (("code", "undecodable"),)): 1}
    assert value["deltalog_ticks_total", ()] > 0
    assert value["deltalog_result_rows_total", (("sign", "+"),)] == ROWS_ADDED
    assert value["deltalog_result_rows_total", (("sign", "-"),)] == ROWS_REMOVED
    written = [c.weight for c in committed_changes(observed.config, "paths") if not c.snapshot]
    assert (written.count(1), written.count(-1)) == (ROWS_ADDED, ROWS_REMOVED)
    # One tick per good transaction (tick_max_tx=1), each stepping the query once, locally.
    assert value["deltalog_query_steps_total", (("executor", "local"),)] == len(GOOD)
    assert value["deltalog_query_step_duration_seconds_count", (("query", "paths"),)] == len(GOOD)
    assert value["deltalog_tick_chunks_total", ()] == len(GOOD)
    assert value["deltalog_extender_work_total", (("kind", "calls"),)] > 0
    assert value["deltalog_tick_limit_transactions", ()] == 1
    assert value["deltalog_memory_limit_bytes", ()] == 0  # no ceiling configured
    assert value["deltalog_consumer_lag_seconds", ()] == 0  # caught up
    for index in ("EAV", "AEV", "AVE", "VAE"):  # bytes: sized at the first tick, then 30 s on
        assert value["deltalog_arrangement_datoms", (("index", index),)] == 3  # 1→2 3→4 1→3
        assert value["deltalog_arrangement_bytes", (("index", index),)] > 0
    # the local dictionary keeps every value in memory: the entities and the attribute
    assert value["deltalog_dictionary_values", (("kept", "memory"),)] >= 5
    assert value["deltalog_dictionary_values", (("kept", "files"),)] == 0


@pytest.mark.kafka
def test_a_real_prometheus_scrapes_the_worker_and_evaluates_every_query(
        observed: Observed, tmp_path: Path) -> None:
    assert PROMETHEUS.exists(), MISSING_PROMETHEUS
    config = tmp_path / "prometheus.yml"
    config.write_text(json.dumps({  # JSON is YAML
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(ALERTS)],
        "scrape_configs": [{"job_name": "deltalog",
                            "static_configs": [{"targets": [f"127.0.0.1:{observed.port}"]}]}],
    }))
    port = free_port()
    with _prometheus(config, tmp_path, port) as api:

        def evaluated() -> bool:
            rules = _rules(api)
            return bool(rules) and all(rule["health"] == "ok" for rule in rules)

        _until(lambda: _sample(api, "deltalog_tx_consumed_total") == len(GOOD),
               f"Prometheus to scrape the worker (see {tmp_path / 'prometheus.log'})",
               observed.worker)
        assert _sample(api, 'up{job="deltalog"}') == 1
        assert _sample(api, 'deltalog_dlq_records_total{code="undecodable"}') == 1
        for expr in _dashboard_exprs():
            query = expr.replace("$worker", ".*").replace("$__rate_interval", "1m")
            assert api("query", query=query)["status"] == "success", expr
        _until(evaluated, "every alert rule evaluated", observed.worker)
        rules = _rules(api)
        assert {rule["name"] for rule in rules} == set(_ALERT.findall(ALERTS.read_text()))
        assert ({n for rule in rules for n in _metric_names(rule["query"])}
                == {n for expr in _alert_exprs() for n in _metric_names(expr)})


# -- helpers ------------------------------------------------------------------------------------

Api = Callable[..., dict[str, Any]]


@contextlib.contextmanager
def _prometheus(config: Path, tmp: Path, port: int) -> Iterator[Api]:
    """A Prometheus of this test alone; yields ``api(endpoint, **params) -> JSON answer``."""
    args = [str(PROMETHEUS), f"--config.file={config}", f"--storage.tsdb.path={tmp / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}"]
    with (tmp / "prometheus.log").open("wb") as log:
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, cwd=tmp)

    def api(endpoint: str, **params: str) -> dict[str, Any]:
        query = urllib.parse.urlencode(params)
        status, body = http_get(f"http://127.0.0.1:{port}/api/v1/{endpoint}?{query}")
        if not status or status == 503:  # 503: listening, its storage not ready yet
            raise ConnectionError(f"Prometheus on {port} is not ready yet")
        assert status == 200, f"Prometheus answered {status}: {body!r}"
        answer: dict[str, Any] = json.loads(body)
        return answer

    try:
        yield api
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _sample(api: Api, query: str) -> float | None:
    """The value of a query that selects one series (None: no such series yet)."""
    result = _maybe(lambda: api("query", query=query)["data"]["result"])
    return float(result[0]["value"][1]) if result and len(result) == 1 else None


def _rules(api: Api) -> list[dict[str, Any]]:
    groups = _maybe(lambda: api("rules")["data"]["groups"]) or []
    return [rule for group in groups for rule in group["rules"]]



def _maybe(read: Callable[[], Any]) -> Any:
    """``read()``, or None while the server is not listening yet."""
    try:
        return read()
    except OSError:
        return None


def _until(done: Callable[[], bool], what: str, worker: WorkerProcess) -> None:
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert worker.alive(), f"worker died ({worker.log}):\n{worker.tail(40)}"
        assert time.monotonic() < deadline, f"waited {WAIT_S} s for {what}"
        time.sleep(POLL_S)
