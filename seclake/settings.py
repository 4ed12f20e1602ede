"""The one settings object, built at start-up and passed down.

Precedence, highest first: explicit values (CLI flags), environment variables
``SECLAKE_<NAME>``, the TOML file (``--config`` or ``SECLAKE_CONFIG``), then
the defaults below. Every field is documented in the README's configuration
table; a test fails when one is missing there.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

MASK = "********"


class OidcProvider(BaseModel):
    """One identity provider users sign in with (OpenID Connect; docs/sso.md)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]{0,31}$", description="Short name, in URLs and as the users' oauthProvider.")
    display_name: str = Field("", max_length=100, description='Shown on the sign-in page: "Sign in with <display_name>".')
    issuer: str = Field(pattern=r"^https?://[^\s?#]+$", max_length=500, description="Issuer URL; its /.well-known/openid-configuration is read.")
    client_id: str = Field(min_length=1, max_length=500)
    client_secret: SecretStr | None = None
    scopes: list[str] = Field(["openid", "email", "profile"], max_length=50)
    username_claim: str = Field("preferred_username", min_length=1, description="Claim naming the seclake user (email: only when verified).")
    groups_claim: str = Field("groups", min_length=1)
    roles: dict[str, list[str]] = Field(default_factory=dict, description="Group -> seclake roles, set at each sign-in.")
    data_policies: dict[str, list[str]] = Field(default_factory=dict, description="Group -> data policies ([]: none, all data).")
    default_roles: list[str] = Field(["analyst"], description="Roles when no group maps to one; empty: such users are refused.")
    create_users: bool = Field(True, description="Create unknown users at first sign-in; false: only users added beforehand.")
    leeway_seconds: int = Field(60, ge=0, le=300, description="Clock difference allowed when checking expiry and issue time.")

    @field_validator("scopes", mode="after")
    @classmethod
    def _openid(cls, v: list[str]) -> list[str]:
        return v if "openid" in v else ["openid", *v]

    @property
    def label(self) -> str:
        return self.display_name or self.name


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="SECLAKE_", extra="forbid", validate_default=True)

    # where things live
    data_dir: Path = Field(Path("./data"), description="Directory holding everything the service stores.")
    database_url: str | None = Field(
        None,
        description="SQLAlchemy URL of the metadata database; default SQLite file seclake.db in the data dir.",
    )
    config: Path | None = Field(None, description="Optional TOML settings file.")

    # HTTP
    host: str = Field("127.0.0.1", description="Address the HTTP server listens on.")
    port: int = Field(8080, ge=0, le=65535, description="Port the HTTP server listens on.")
    max_body_bytes: int = Field(1024 * 1024, ge=1024, description="Largest JSON call body accepted, in bytes.")
    max_import_bytes: int = Field(
        64 * 1024 * 1024, ge=1024, description="Largest raw import body accepted (after decompression), in bytes."
    )
    max_import_memory_mb: int = Field(
        512, ge=16, description="Most memory one HTTP import's records may take before they are stored (about 1 KB per line plus its length), in MB."
    )
    max_json_depth: int = Field(32, ge=2, le=1000, description="Deepest JSON nesting accepted in a call body.")
    http_error_status: bool = Field(
        False,
        description="Answer API errors with their HTTP status (400, 401, 403...) instead of 200 with verdict ERROR "
        "(the clients of this interface read the body only on 200); the status is in X-Seclake-Status either way.",
    )

    # first start
    admin_password: SecretStr | None = Field(
        None, description="Password of the admin user created on first start; generated and printed when unset."
    )
    load_demo: bool = Field(True, description="`seclake up`: load demo data when the data dir is empty.")
    demo_days: int = Field(7, ge=1, le=90, description="Days of demo data `seclake up` loads.")

    # authentication
    password_min_length: int = Field(10, ge=8, le=128, description="Shortest password accepted.")
    password_min_strength: int = Field(
        2, ge=0, le=4, description="Least zxcvbn rating (0-4) a new password needs: common, repeated or guessable ones are refused; 0 checks length only."
    )
    session_idle_minutes: float = Field(30, gt=0, description="A session ends after this many idle minutes.")
    session_max_hours: float = Field(12, gt=0, description="A session ends this many hours after login.")
    login_max_failures: int = Field(
        10, ge=1, description="Failed logins of one username from one address that lock that username there."
    )
    login_address_max_failures: int = Field(
        100, ge=1, description="Failed logins from one address, over every username, that lock the address out."
    )
    login_window_minutes: float = Field(15, gt=0, description="Window in which failed logins are counted.")
    login_lockout_minutes: float = Field(15, gt=0, description="How long a locked username or address is refused.")
    oidc_providers: list[OidcProvider] = Field(
        default_factory=list,
        description="Identity providers users may sign in with (OpenID Connect): TOML [[oidc_providers]] tables (env: a JSON list); docs/sso.md.",
    )
    local_passwords: bool = Field(
        True, description="Sign-in with a seclake password; false: only the break_glass_admin may (everyone else signs in with an identity provider)."
    )
    break_glass_admin: str = Field(
        "admin", min_length=1, max_length=128, description="The one user who may still sign in with a password when local_passwords is false."
    )
    public_url: str | None = Field(
        None, pattern=r"^https?://[^\s?#]+$",
        description="The address users reach seclake at (https://seclake.example.com), for the identity providers' redirect URI; unset: the request's own.",
    )
    trusted_proxies: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Reverse proxies (addresses or networks such as 10.0.0.0/8) whose X-Forwarded-For names the client, read right to left; from any other peer the header is ignored (env comma-separated).",
    )

    # ingestion and storage
    commit_interval_seconds: float = Field(
        1.0, gt=0, le=60, description="Accepted records become searchable within about this time."
    )
    merge_quiet_seconds: float = Field(
        30.0, gt=0, le=86400,
        description="A day (of a partition) that has received nothing for this long is merged into one split; until then its splits merge in tiers.",
    )
    build_niceness: int = Field(
        10, ge=0, le=19,
        description="CPU priority of the split-building worker processes (nice): above 0 the server's searches and ingest take the CPU first; 0: the server's priority (docs/operations.md).",
    )
    spread_hold_seconds: float = Field(
        5.0, ge=0, le=60,
        description="How long the indexer holds records spread over many days (an import of past days) for more while more keeps coming, so that it writes fewer, larger splits and searches stay fast meanwhile (docs/operations.md); 0: never.",
    )
    ingest_yield_share: float = Field(
        0.5, ge=0, le=0.9,
        description="The largest share of time bulk imports wait for running searches (searches first: docs/operations.md); 0 never waits.",
    )
    customer_partitions: int = Field(
        1,
        ge=1,
        le=64,
        description="Splits a dataset's day is written in, by @customer (the largest customers get their own; searches restricted to a customer skip the others'); 1: one split per day.",
    )
    parse_workers: int | None = Field(
        None,
        ge=0,
        le=64,
        description="Worker processes that parse large HTTP import and Elasticsearch bulk bodies and match the "
        "behavior rules on their records, leaving the server's own process admission, the rules' state and the log (past about three cores "
        "its CPU bounds the ingest); 0: in the request thread; unset: with four cores or more, the cores beyond two "
        "(at most four), else 0.",
    )
    retention_days: int = Field(90, ge=0, description="Splits older than this many days are deleted; 0 keeps all.")
    retention_interval_minutes: float = Field(60, gt=0, description="How often the server applies retention.")
    idempotency_key_hours: float = Field(
        24, gt=0, le=24 * 365, description="How long an import's Idempotency-Key is remembered (a retry within it is a replay)."
    )

    # search limits
    default_operator: Literal["AND", "OR"] = Field("AND", description="Operator between terms written side by side.")
    max_fetch_limit: int = Field(1000, ge=1, description="Largest fetchLimit accepted.")
    max_result_window: int = Field(10000, ge=1, description="Largest fetchOffset + fetchLimit accepted.")
    max_facets: int = Field(20, ge=0, description="Most facets in one request.")
    max_facet_size: int = Field(1000, ge=1, description="Largest facet size accepted.")
    max_query_length: int = Field(8192, ge=16, description="Longest searchStr accepted, in characters.")
    max_clauses: int = Field(1024, ge=1, description="Most clauses (terms, phrases, ranges...) in one query.")
    max_pattern_length: int = Field(256, ge=1, description="Longest wildcard or regex pattern accepted.")
    max_query_memory_mb: int = Field(
        64, ge=1, description="Most memory one query's wildcards, regexes and string ranges may compile to (estimated from the query text), in MB."
    )
    max_histogram_buckets: int = Field(2000, ge=1, description="Most buckets a date histogram may have.")
    # analytics (piped queries: docs/analytics.md)
    analytics_max_records: int = Field(
        5_000_000, ge=1, description="Most records one analytics query may read (those its search before the first pipe matches); past it the query is refused before reading."
    )
    analytics_timeout_seconds: float = Field(
        60.0, gt=0, le=3600, description="Most time an analytics query answered at once (ds/query) may take; longer ones run as tasks."
    )
    analytics_task_timeout_seconds: float = Field(
        3600.0, gt=0, le=86400, description="Most time an analytics task (ds/query_async) may run."
    )
    analytics_task_keep_seconds: float = Field(
        3600.0, gt=0, le=7 * 86400, description="How long a finished analytics task's result is kept."
    )
    analytics_task_workers: int = Field(1, ge=1, le=64, description="Analytics tasks run at once; more wait their turn.")
    analytics_max_tasks: int = Field(64, ge=1, description="Most analytics tasks kept (queued, running or finished).")
    analytics_max_tasks_per_user: int = Field(8, ge=1, description="Most analytics tasks kept for one user.")
    analytics_columnar: bool = Field(
        True, description="Answer the analytics queries it takes (STATS over WHERE and EVAL) column by column, from columns of the splits kept beside them (docs/analytics.md, Speed); off: every query record by record."
    )
    analytics_max_running_calls: int = Field(
        2, ge=1, le=64, description="Analytics queries answered at once by ds/query (each holds a call thread); more are refused (429) saying to retry or submit a task."
    )

    # triage
    score_bands: list[tuple[int, str]] = Field(
        [(6000, "critical"), (4500, "serious"), (3500, "high"), (2000, "medium"), (1, "low")],
        description='Score levels as [minimum, label] pairs, highest first; a score of 0 or less reads "0".',
    )

    # cluster mode (docs/deploy-cluster.md)
    ray_address: str | None = Field(
        None,
        description="Ray cluster (HOST:PORT) to join: searches run on its searcher actors; unset runs them in-process.",
    )
    ray_namespace: str = Field(
        "seclake", min_length=1, description="Ray namespace of this deployment's searchers (several deployments may share a cluster)."
    )
    ingest: bool = Field(
        True,
        description="This node owns the lake (log, indexer, detector, retention); false on extra API nodes, which hand imports to the ingest node (cluster mode) or refuse them.",
    )
    standby: bool = Field(
        False,
        description="Ingest node that waits (not serving) until the running ingest node's process ends, then takes over its lake; the data dir (log included) must be on storage both share.",
    )
    ingest_timeout_seconds: float = Field(
        60.0, gt=0, le=3600, description="Cluster mode: how long a read-only API node waits for the ingest node to take an import."
    )
    opaque_record_ids: bool = Field(
        True, description="Show docId, _id and behavior sequence/eventId through a keyed permutation of the log sequence, so they reveal no volumes; false shows the sequence itself."
    )
    listeners: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Syslog and NetFlow listeners started with the server: URLs such as syslog+udp://0.0.0.0:5514?vendor=fortigate or netflow://0.0.0.0:2055 (TOML list; env comma-separated; docs/receivers.md).",
    )
    # At least 16 characters: an empty value (SECLAKE_METRICS_TOKEN=) was a
    # token too, and "Bearer " then opened /metrics to every address.
    metrics_token: SecretStr | None = Field(
        None, min_length=16,
        description="Bearer token GET /metrics asks for (16 characters or more); unset, /metrics answers loopback clients only.",
    )
    slow_request_seconds: float = Field(
        5.0, gt=0, le=3600, description="A call that takes longer is logged once (warning) with its caller and duration."
    )
    search_timeout_seconds: float = Field(
        30.0, gt=0, le=3600, description="Most time a search of records kept in the database (summaries, audit, rules) may take; past it the search stops and answers an error (504)."
    )
    cluster_timeout_seconds: float = Field(
        30.0, gt=0, le=600, description="Cluster mode: deadline of one search; a split not answered by then counts as failed."
    )
    searchers_per_node: int = Field(1, ge=1, le=64, description="`seclake searcher`: searcher actors started on the node.")
    searcher_concurrency: int = Field(
        4, ge=1, le=256, description="Calls one searcher actor takes at once, and threads running their splits."
    )
    searcher_warm_days: float = Field(
        7, ge=0, le=3650, description="The ingest node asks each searcher to open its splits of the last this many days ahead of searches; 0: off."
    )
    indexers_per_node: int = Field(
        1, ge=0, le=64, description="`seclake searcher`: indexer actors (split building for the ingest node) started on the node."
    )
    searcher_max_open_splits: int = Field(
        2000, ge=1, description="Splits one searcher keeps open; the least recently used are closed past this."
    )

    # splits on S3-compatible object storage (docs/deploy-cluster.md)
    split_store_url: str | None = Field(
        None,
        description="Object storage of the splits, s3://bucket/prefix (needs the s3 extra); unset keeps them on the shared filesystem only.",
    )
    split_store_endpoint: str | None = Field(
        None, description="S3-compatible endpoint URL (MinIO, Ceph...); unset: AWS_ENDPOINT_URL, else AWS S3."
    )
    split_store_region: str | None = Field(None, description="Region of the split store; unset: AWS_REGION / AWS_DEFAULT_REGION.")
    split_store_access_key_id: str | None = Field(
        None, description="Access key id of the split store; unset: AWS_ACCESS_KEY_ID, else the instance's role."
    )
    split_store_secret_access_key: SecretStr | None = Field(
        None, description="Secret access key of the split store; unset: AWS_SECRET_ACCESS_KEY."
    )
    split_cache_dir: Path | None = Field(
        None,
        description="Searchers' local copies of stored splits (with split_store_url); default split-cache in the data dir.",
    )
    split_cache_bytes: int = Field(
        10 * 1024**3,
        ge=1024 * 1024,
        description="Disk one searcher's local split copies may use; least recently used removed first (splits in use excepted).",
    )

    # notifications (docs/alerting.md)
    public_url: str | None = Field(
        None, description="The web interface's address as users reach it (https://seclake.example.org): "
        "notifications link back to the summary there; no link when unset.",
    )
    notify_retry_seconds: float = Field(
        3600, ge=1, le=7 * 86400, description="How long a notification is retried before it is kept as failed, in seconds.",
    )
    notify_backoff_max_seconds: float = Field(
        300, ge=0.1, le=86400, description="Longest wait between two attempts of one notification (2 s doubling, with jitter), in seconds.",
    )
    notify_timeout_seconds: float = Field(
        10, ge=0.1, le=300, description="Time one delivery attempt may take (connect, send, answer), in seconds.",
    )
    smtp_url: str | None = Field(
        None, description="Email notifications' server: smtp://, smtp+starttls:// or smtps://[user@]host[:port].",
    )
    smtp_password: SecretStr | None = Field(None, description="Password of smtp_url's user.")
    smtp_from: str | None = Field(None, description="From address of email notifications.")

    log_level: Literal["debug", "info", "warning", "error"] = Field("info", description="Server log level.")
    log_format: Literal["text", "json"] = Field(
        "text", description="Server log lines: text, or json (one object per line, with request id, call, caller, outcome and duration)."
    )

    @field_validator("score_bands", mode="after")
    @classmethod
    def _bands(cls, v: list[tuple[int, str]]) -> list[tuple[int, str]]:
        # Checked by the module that applies them, so the rules live in one place.
        from seclake.detect.scorelevel import check_bands

        return list(check_bands(v))

    @field_validator("split_store_url", "split_store_endpoint", mode="after")
    @classmethod
    def _store_url(cls, v: str | None, info) -> str | None:
        # Checked here so a typo stops the start, not the first upload.
        from seclake.storage.splitstore import check_url

        return check_url(info.field_name, v) if v else None

    @field_validator("listeners", mode="before")
    @classmethod
    def _listeners(cls, v: Any) -> Any:
        # The environment gives one string: URLs separated by commas (a URL's own
        # query uses '&', never ',').
        if isinstance(v, str):
            v = [part for part in (p.strip() for p in v.split(",")) if part]
        if isinstance(v, list):
            from seclake.service.listeners import ListenerSpec

            for url in v:
                if isinstance(url, str):
                    ListenerSpec.parse(url)  # a bad URL stops the start with what is wrong
        return v

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _proxies(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = [part for part in (p.strip() for p in v.split(",")) if part]
        if isinstance(v, list) and v:
            from seclake.api.proxies import check_proxies

            return check_proxies(v)  # a wrong entry stops the start with what is wrong
        return v

    @field_validator("oidc_providers", mode="after")
    @classmethod
    def _provider_names(cls, v: list[OidcProvider]) -> list[OidcProvider]:
        names = [p.name for p in v]
        if len(set(names)) != len(names):
            raise ValueError(f"provider names must differ: {names}")
        return v

    @field_validator("data_dir", mode="after")
    @classmethod
    def _absolute(cls, v: Path) -> Path:
        return v.expanduser().resolve()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        toml_file = _toml_path(init_settings)
        if toml_file is not None:
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=toml_file))
        return tuple(sources)

    @property
    def effective_split_cache_dir(self) -> Path:
        return (self.split_cache_dir or self.data_dir / "split-cache").expanduser().resolve()

    @property
    def effective_parse_workers(self) -> int:
        """``parse_workers``, or when unset: with four cores or more, the cores beyond two (at most four).

        Measured on two cores (docs/benchmarks.md, the scaling stage): parse
        workers halve the server process's CPU per line but add ~10% to the
        CPU of all processes together (records decoded twice, more processes
        sharing the cores). Where the cores are all busy the total decides,
        so two or three cores do better without; from four on, the server's
        one interpreter is the bound and they raise it.
        """
        if self.parse_workers is not None:
            return self.parse_workers
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return min(4, cores - 2) if cores >= 4 else 0

    @property
    def effective_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.data_dir / 'seclake.db'}"

    def masked(self) -> dict[str, Any]:
        """The effective settings as plain values, with secrets masked."""
        out: dict[str, Any] = {}
        for name in type(self).model_fields:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                value = MASK if value.get_secret_value() else None
            elif name == "database_url" and value:
                value = _mask_url_password(value)
            elif isinstance(value, Path):
                value = str(value)
            elif name == "oidc_providers":
                value = [p.model_dump(mode="json") for p in value]  # SecretStr dumps masked
            out[name] = value
        out["effective_database_url"] = _mask_url_password(self.effective_database_url)
        return out


def _toml_path(init_settings: PydanticBaseSettingsSource) -> Path | None:
    explicit = init_settings().get("config")
    path = explicit or os.environ.get("SECLAKE_CONFIG")
    return Path(path) if path else None


def _mask_url_password(url: str) -> str:
    from sqlalchemy.engine import make_url

    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return MASK


def load_settings(**overrides: Any) -> Settings:
    """Build the settings from overrides (None values are ignored), env and TOML."""
    return Settings(**{k: v for k, v in overrides.items() if v is not None})
