"""Worker settings: one frozen object, from defaults, a TOML file, ``DELTALOG_*`` variables and
flags — each source beats the ones before it.

The file (``--config FILE`` or ``$DELTALOG_CONFIG``) holds settings under their field names
and librdkafka keys, verbatim, in a ``[kafka]`` table; an unknown key or a value of the wrong
type is refused, naming the file and the key::

    bootstrap_servers = "kafka-1:9093"
    tick_max_tx = 500
    [kafka]
    "security.protocol" = "SASL_SSL"
    "sasl.mechanism" = "PLAIN"

Snapshots go to ``snapshot_dir``, or to ``snapshot_url`` when it is set: a store the fleet
shares, any URL ``pyarrow.fs`` opens (``s3://bucket/deltalog?region=eu-west-1``, ``gs://``,
``hdfs://``, ``file://``); credentials in it are masked like the registry's.

The executor settings (``executor``, ``spark_*``) say where plans run: ``local`` (default),
``spark`` or ``auto``; ``spark_conf`` is ``key=value`` pairs separated by commas, passed to
Spark as they are (``DELTALOG_SPARK_CONF=spark.driver.memory=4g,spark.executor.cores=2``);
``spark_state`` is where the Spark executor writes the database for its tasks (a directory
or a ``pyarrow.fs`` URL every Spark executor reaches; a temporary directory by default);
``spark_memory_values`` how many values of the dictionary the driver keeps in memory (the
latest numbered; the others are in files of its own); ``spark_sharing`` is ``worker`` (each
worker writes a state of its own) or ``fleet`` (the fleet's workers share the one at
``spark_state``: the owner of the queries topic's partition 0 writes it, the others follow
it — ``docs/spark.md``).

Kafka client settings pass through unchanged (librdkafka names) from ``kafka_extra``: the
file's ``[kafka]`` table, then ``DELTALOG_KAFKA__<KEY>`` variables
(``DELTALOG_KAFKA__SECURITY_PROTOCOL=SASL_SSL`` → ``security.protocol``), so TLS and SASL work
as in any confluent-kafka client.  :func:`masked` (and ``repr``) shows a config with its
secrets as ``***``, so it is safe to print and log.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import socket
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import Field, dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from workers.arrangements.spilled import SPILL_VALUES
from workers.errors import ErrorCode, WorkersError
from workers.executors.dispatch import SPARK_BOOTSTRAP_DATOMS, SPARK_TICK_DATOMS, AutoPolicy
from workers.executors.threads import default_threads

if TYPE_CHECKING:
    from workers.executors.spark.session import SparkSettings

SPARK_SHARING = ("worker", "fleet")
ENV_PREFIX = "DELTALOG_"
KAFKA_ENV_PREFIX = "DELTALOG_KAFKA__"
# How long a view topic keeps a left row's tombstone after compaction (its
# delete.retention.ms; ``workers/kafka/topics.py`` says why two minutes).  Here, not in
# ``kafka/``, because the Kafka modules take their settings from this one.
VIEW_TOMBSTONES_MS = 2 * 60 * 1000
CONFIG_ENV = "DELTALOG_CONFIG"  # the TOML file, when no --config flag names one
KAFKA_TABLE = "kafka"
MASK = "***"
# A librdkafka key holding one of these is a secret (ssl.keystore.password, sasl.password,
# sasl.oauthbearer.client.secret, ...): masked wherever settings are shown.
SECRET_KAFKA_KEYS = ("password", "secret", "sasl.oauthbearer.config", "ssl.key.pem")
_USERINFO = re.compile(r"(://)([^/?#]*)@")  # greedy: up to the authority's last '@'
_SPARK_TOKEN = re.compile(r"(;token=)[^;]*")  # Spark Connect: sc://host:15002/;token=...


@dataclass(frozen=True, slots=True, repr=False)
class WorkerConfig:
    bootstrap_servers: str = "127.0.0.1:9092"
    topic_prefix: str = "deltalog"
    worker_id: str = field(default_factory=socket.gethostname)
    strategy: str = "delta"
    # Transactions per tick at most.  A live worker's ticks take what has arrived (a few at
    # low load), so this bounds only a worker behind the log: its catch-up ticks, where a
    # tick's fixed costs and its queries' steps are shared by every transaction in it
    # (docs/fleet.md, "Catch-up": 1,000 replayed ~1,000 tx/s, 50,000 ~15,000).
    tick_max_tx: int = 50_000
    tick_max_bytes: int = 4 << 20  # encoded transaction bytes per tick at most
    tick_max_datoms: int = 10_000  # a larger tick delta is stepped and written in pieces
    tick_max_wait_s: float = 0.05  # longest an idle worker waits for the first transaction
    snapshot_dir: Path = Path(".deltalog/snapshots")
    snapshot_url: str | None = None  # the fleet's store (s3://, gs://, hdfs://, file://): wins
    snapshot_interval_s: float = 60.0
    registry_url: str | None = None
    metrics_port: int | None = None
    executor: str = "local"  # local | spark | auto (workers.executors.dispatch)
    step_threads: int = field(default_factory=default_threads)  # a big step's threads
    spark_master: str = "local[*]"
    spark_remote: str | None = None  # a Spark Connect URL (sc://host:15002) instead of a master
    spark_conf: str = ""
    spark_state: str | None = None  # where Spark's tasks read the state (None: a temporary dir)
    spark_sharing: str = "worker"  # worker: a state per worker | fleet: one, at spark_state
    spark_memory_values: int = SPILL_VALUES  # values of the driver's dictionary in memory
    spark_tick_datoms: int = SPARK_TICK_DATOMS  # auto: ticks this large run on Spark
    spark_bootstrap_datoms: int = SPARK_BOOTSTRAP_DATOMS  # auto: bootstraps on a db this large
    group_id: str | None = None  # the workers' consumer group (default <topic_prefix>.workers)
    session_timeout_ms: int = 3000  # a worker silent this long loses its queries
    group_protocol: str = "classic"  # classic | consumer (KIP-848): the workers' group
    query_partitions: int = 12  # partitions of a new queries topic: the most workers that help
    memory_limit_mb: int | None = None  # over it, ticks shrink and consumption slows
    ready_lag_tx: int = 1000  # ready when at most this many transactions behind the log
    transaction_timeout_ms: int = 6000  # a dead worker's open transaction ends after this
    view_tombstones_ms: int = VIEW_TOMBSTONES_MS  # new view topics keep a left row's tombstone
    kafka_extra: Mapping[str, str] = field(default_factory=dict)

    def spark(self) -> SparkSettings:
        """Where Spark runs, for ``executor`` spark or auto."""
        from workers.executors.spark.session import SparkSettings  # PySpark only when asked

        try:
            conf = dict(pair.split("=", 1) for pair in self.spark_conf.split(",") if pair)
        except ValueError:
            raise WorkersError(f"spark_conf must be key=value pairs separated by commas, not "
                               f"{self.spark_conf!r}", code=ErrorCode.CONFIG) from None
        if self.spark_sharing not in SPARK_SHARING:
            raise WorkersError(f"spark_sharing is one of {', '.join(SPARK_SHARING)}, not "
                               f"{self.spark_sharing!r}", code=ErrorCode.CONFIG)
        if self.spark_sharing == "fleet" and (self.executor != "spark" or not self.spark_state):
            raise WorkersError("spark_sharing=fleet takes executor=spark and a spark_state "
                               "every worker reaches", code=ErrorCode.CONFIG)
        return SparkSettings(self.spark_master, self.spark_remote, conf, self.spark_state,
                             self.spark_memory_values)

    def snapshot_store(self) -> str | Path:
        """Where snapshots go: ``snapshot_url`` when set, else ``snapshot_dir``."""
        return self.snapshot_url or self.snapshot_dir

    def auto(self) -> AutoPolicy:
        return AutoPolicy(self.spark_tick_datoms, self.spark_bootstrap_datoms)

    def kafka(self, **overrides: Any) -> dict[str, Any]:
        """librdkafka settings for a client of this worker.  Requests leave at once
        (``TCP_NODELAY``), as the Java client's always do: with Nagle's algorithm,
        librdkafka's default, a small request written while the connection still has bytes
        unacknowledged waits for their ACK (a loop of transactions: 3.82 → 3.63 ms each;
        through the pipeline, within the noise: docs/benchmarks.md, thirteenth session)."""
        return {"bootstrap.servers": self.bootstrap_servers, "socket.nagle.disable": True,
                **self.kafka_extra, **overrides}

    def __repr__(self) -> str:
        """Safe to log: secrets masked (:func:`masked`)."""
        shown = ", ".join(f"{name}={value!r}" for name, value in masked(self).items())
        return f"WorkerConfig({shown})"


class _Kind(NamedTuple):
    """How a setting's type is read: from a variable's text or a TOML value alike."""

    convert: Callable[[Any], Any]
    toml_types: tuple[type, ...]
    description: str


_KINDS = {
    "int": _Kind(int, (int,), "an integer"),
    "float": _Kind(float, (int, float), "a number"),
    "str": _Kind(str, (str,), "a string"),
    "Path": _Kind(Path, (str,), "a string (a path)"),
}


def from_env(env: Mapping[str, str] | None = None, config_file: Path | str | None = None,
             **overrides: Any) -> WorkerConfig:
    """Settings from defaults < the TOML file < ``DELTALOG_*`` variables < ``overrides`` (e.g.
    CLI flags; ``None`` ones are ignored).  The file is ``config_file``, else
    ``$DELTALOG_CONFIG``, else none."""
    env = os.environ if env is None else env
    path = config_file or env.get(CONFIG_ENV)
    values, kafka_extra = load_file(Path(path)) if path else ({}, {})
    values.update(_from_variables(env))
    kafka_extra.update({key[len(KAFKA_ENV_PREFIX):].lower().replace("_", "."): value
                        for key, value in env.items() if key.startswith(KAFKA_ENV_PREFIX)})
    values["kafka_extra"] = kafka_extra
    values.update({k: v for k, v in overrides.items() if v is not None})
    return replace(WorkerConfig(), **values)


def load_file(path: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings and the ``[kafka]`` table of a TOML file, checked key by key."""
    try:
        with path.open("rb") as file:
            document = tomllib.load(file)
    except OSError as err:
        raise _file_error(path, f"cannot read it ({err.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as err:
        raise _file_error(path, f"not valid TOML: {err}") from None
    kafka = document.pop(KAFKA_TABLE, {})
    if not isinstance(kafka, dict):
        raise _file_error(path, f"{KAFKA_TABLE} must be a table of librdkafka settings, "
                                f"not {_toml_type(kafka)}")
    settings = {f.name: f for f in _settings()}
    values = {key: _setting(path, key, value, settings) for key, value in document.items()}
    return values, {key: _kafka_value(path, key, value) for key, value in kafka.items()}


def masked(config: WorkerConfig) -> dict[str, Any]:
    """The settings as plain data (paths as text, ``kafka`` for ``kafka_extra``) with secrets
    as ``***``: kafka keys naming a secret, a password in ``registry_url``, a Spark Connect
    token."""
    shown = {f.name: getattr(config, f.name) for f in _settings()}
    shown["snapshot_dir"] = str(config.snapshot_dir)
    shown["snapshot_url"] = mask_url(config.snapshot_url)
    shown["registry_url"] = mask_url(config.registry_url)
    shown["spark_remote"] = mask_url(config.spark_remote)
    shown[KAFKA_TABLE] = {key: MASK if any(word in key for word in SECRET_KAFKA_KEYS) else value
                          for key, value in sorted(config.kafka_extra.items())}
    return shown


def to_toml(shown: Mapping[str, Any]) -> str:
    """:func:`masked` settings as a TOML file (unset ones as comments) that loads back."""
    lines = [f"# {key} is not set" if value is None else f"{key} = {_toml_value(value)}"
             for key, value in shown.items() if key != KAFKA_TABLE]
    lines += ["", f"[{KAFKA_TABLE}]"]
    lines += [f"{_toml_value(key)} = {_toml_value(value)}"
              for key, value in shown[KAFKA_TABLE].items()]
    return "\n".join(lines) + "\n"


# -- reading -------------------------------------------------------------------------------

def _settings() -> list[Field[Any]]:
    """The scalar settings: every field but ``kafka_extra`` (the ``[kafka]`` table)."""
    return [f for f in fields(WorkerConfig) if f.name != "kafka_extra"]


def _kind(setting: Field[Any]) -> _Kind:
    return _KINDS[str(setting.type).removesuffix(" | None")]


def _from_variables(env: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for setting in _settings():
        variable = ENV_PREFIX + setting.name.upper()
        if variable in env:
            kind = _kind(setting)
            try:
                values[setting.name] = kind.convert(env[variable])
            except ValueError:
                raise WorkersError(f"{variable}={env[variable]!r} is not {kind.description}",
                                   code=ErrorCode.CONFIG) from None
    return values


def _setting(path: Path, key: str, value: Any, settings: Mapping[str, Field[Any]]) -> Any:
    if key not in settings:
        close = difflib.get_close_matches(key, [*settings, KAFKA_TABLE], n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise _file_error(path, f"unknown key {key!r}{hint}")
    kind = _kind(settings[key])
    if isinstance(value, bool) or not isinstance(value, kind.toml_types):
        raise _file_error(path, f"{key} must be {kind.description}, not {_toml_type(value)}")
    return kind.convert(value)


def _kafka_value(path: Path, key: str, value: Any) -> str:
    """librdkafka takes every value as text: booleans as ``true``/``false``."""
    if isinstance(value, bool):
        return str(value).lower()
    if not isinstance(value, str | int | float):
        # An unquoted dotted key (security.protocol = ...) is a table in TOML.
        hint = f' (quote dotted keys: "{key}.…" = …)' if isinstance(value, dict) else ""
        raise _file_error(path, f"{KAFKA_TABLE}.{key} must be a string, number or boolean, "
                                f"not {_toml_type(value)}{hint}")
    return str(value)


def _toml_type(value: Any) -> str:
    names = {bool: "a boolean", int: "an integer", float: "a float", str: "a string",
             list: "an array", dict: "a table"}
    return names.get(type(value), "a date or time")


def _file_error(path: Path, problem: str) -> WorkersError:
    return WorkersError(f"config file {path}: {problem}", code=ErrorCode.CONFIG, form=str(path))


# -- showing -------------------------------------------------------------------------------

def mask_url(url: str | None) -> str | None:
    """``https://user:pass@host`` → ``https://user:***@host`` (a bare ``token@`` → ``***@``)."""
    if url is None:
        return None

    def userinfo(match: re.Match[str]) -> str:
        user, colon, _ = match[2].partition(":")
        return f"{match[1]}{user}:{MASK}@" if colon else f"{match[1]}{MASK}@"

    return _SPARK_TOKEN.sub(rf"\g<1>{MASK}", _USERINFO.sub(userinfo, url, count=1))


def _toml_value(value: Any) -> str:
    """A TOML literal: JSON's string escapes are TOML's, but TOML takes no surrogate pairs
    (so non-ASCII stays as it is) and wants DEL escaped too."""
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")
