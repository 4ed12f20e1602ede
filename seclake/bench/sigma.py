"""The ingest with every SigmaHQ rule seclake imports, side by side with the starter pack.

SigmaHQ's rules come from ``../shared/sigma/sigmahq-*.tar.gz`` beside the
repository (never copied into it): the rule folders chosen (``rules*`` by
default: every folder) are extracted into the run's data dir and imported
with ``seclake rules import`` into a data dir made for it, as an operator
would; the importer skips, with its reason, every rule whose log source
seclake does not parse, so what stays is every SigmaHQ rule for the supported
sources, enabled. Each Sigma run starts from a copy of that data dir (the
starter pack is there too: the import's first start installed it), each
starter-pack run from a copy of one a one-shot command started once the
same way (``prepare``).

The same sample of the benchmark's lines then goes over HTTP to a fresh
server with each rule set, in ``TURNS`` (starter, Sigma, Sigma, starter: a
drift of the shared machine's speed weighs on both alike), timed to
searchable as the main ingest stage is (``ingest.http_ingest``). The sample
is the first lines of every batch file, the same share of each: every
source and day in its proportion (the first batches in time order would
leave the Windows and Sysmon lines out of a small sample). Beside the
rates, each run reads the server's memory after its start (rules loaded)
and after the ingest (their matchers compiled and used), and the behaviors
the rules made, so a Sigma run that fired nothing would show.
"""

from __future__ import annotations

import fnmatch
import math
import re
import shutil
import subprocess
import sys
import tarfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from seclake.bench.data import Batch, DataSet
from seclake.bench.server import Server, bench_env, call

# ../shared/sigma beside the repository (tests and the bench read it there; see its README).
SHARED = Path(__file__).resolve().parents[2] / ".." / "shared" / "sigma"
RULES = ("rules*",)  # every rule folder: rules, rules-emerging-threats, rules-threat-hunting, ...
TURNS = ("starter", "sigma", "sigma", "starter")
TARGET = 0.7  # the Sigma rate at least 0.7x the starter pack's (issue 41)


def archive(where: Path = SHARED) -> Path | None:
    """SigmaHQ's archive under ``where`` (the newest name if several), or None when there is none."""
    found = sorted(where.glob("sigmahq-*.tar.gz")) if where.is_dir() else []
    return found[-1] if found else None


def extract(tar: Path, directory: Path, select: tuple[str, ...] = RULES) -> list[Path]:
    """The rule files and folders of ``tar`` that ``select`` names (globs under the archive's top
    folder, e.g. ``rules*`` or ``rules/windows/process_creation/*.yml``), extracted under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tar) as t:
        members = t.getmembers()
        tops = {m.name.split("/", 1)[0] for m in members}
        top = next(iter(tops)) + "/" if len(tops) == 1 else ""

        def chosen_member(m: tarfile.TarInfo) -> bool:  # a member a pattern names, or one under such a folder
            parts = m.name.removeprefix(top).split("/")
            return any(fnmatch.fnmatchcase("/".join(parts[:k]), pattern)
                       for pattern in select for k in range(1, len(parts) + 1))

        # Only what is chosen (all of SigmaHQ is ~4,000 files); the data filter refuses links,
        # devices and paths outside ``directory``.
        t.extractall(directory, members=[m for m in members if chosen_member(m)], filter="data")
    root = directory / top if top else directory
    chosen = sorted({p for pattern in select for p in root.glob(pattern)})
    if not chosen:
        raise FileNotFoundError(f"{tar}: nothing matches {', '.join(select)}")
    return chosen


_READ = re.compile(r"^Sigma: (\d+) rules read, (\d+) imported, (\d+) filtered out, (\d+) skipped$")
_SKIP = re.compile(r"^\s+skipped (\d+): (.+)$")


def import_rules(paths: list[Path], data_dir: Path, log_path: Path) -> dict[str, Any]:
    """``seclake rules import PATHS`` into a fresh ``data_dir`` (its first start installs the starter
    pack): the counts it printed (read, imported, skipped by reason) and its seconds."""
    data_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "seclake", "rules", "import", *map(str, paths),
                        "--data-dir", str(data_dir)], env=bench_env(data_dir), capture_output=True, text=True)
    seconds = time.perf_counter() - started
    with open(log_path, "a") as log:
        log.write(r.stdout + r.stderr)
    if r.returncode != 0:
        raise RuntimeError(f"seclake rules import exited with {r.returncode}: {(r.stderr or r.stdout)[-500:]}")
    out: dict[str, Any] = {"seconds": seconds, "skipped": {}}
    for line in r.stdout.splitlines():
        if m := _READ.match(line):
            out.update(read=int(m[1]), imported=int(m[2]), filtered=int(m[3]), skipped_total=int(m[4]))
        elif m := _SKIP.match(line):
            out["skipped"][m[2]] = int(m[1])
    if "imported" not in out:
        raise RuntimeError(f"seclake rules import read no Sigma rule: {r.stdout[-500:]}")
    return out


def prepare(data_dir: Path, log_path: Path) -> None:
    """A fresh ``data_dir`` with the starter pack only, made by a one-shot command as the Sigma one is
    (``seclake rules export``: migrated, the starter pack installed, the admin made), so that both rule
    sets' servers start on a data dir that has had its first start (the admin's password hash alone
    took ~30 MB more of a server that made it)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([sys.executable, "-m", "seclake", "rules", "export", str(data_dir.parent / "starter-rules"),
                        "--data-dir", str(data_dir)], env=bench_env(data_dir), capture_output=True, text=True)
    with open(log_path, "a") as log:
        log.write(r.stdout + r.stderr)
    shutil.rmtree(data_dir.parent / "starter-rules", ignore_errors=True)
    if r.returncode != 0:
        raise RuntimeError(f"seclake rules export exited with {r.returncode}: {(r.stderr or r.stdout)[-500:]}")


def proportional(data: DataSet, directory: Path, max_lines: int | None) -> DataSet:
    """The first lines of every batch, the same share of each, about ``max_lines`` in all (all: None)."""
    if max_lines is None or max_lines >= data.lines:
        return data
    share = max_lines / data.lines
    directory.mkdir(parents=True, exist_ok=True)
    batches, lines, size = [], 0, 0
    for b in data.batches:
        keep = math.ceil(b.lines * share)
        with open(b.path, "rb") as f:
            body = b"".join(f.readline() for _ in range(keep))
        path = directory / Path(b.path).name
        path.write_bytes(body)
        batches.append(Batch(b.vendor, b.dataset, b.customer, str(path), keep))
        lines, size = lines + keep, size + len(body)
    by_dataset: dict[str, int] = {}
    for b in batches:
        by_dataset[b.dataset] = by_dataset.get(b.dataset, 0) + b.lines
    return replace(data, directory=str(directory), batches=batches, lines=lines, bytes=size, by_dataset=by_dataset)


def behaviors(server: Server, data: DataSet) -> dict[str, int]:
    """The behaviors the server's rules made over the data's window, and how many rules made them."""
    opts = {"range_field": "timestamp", "range_from": data.start_ms, "range_to": data.end_ms, "fetchLimit": 0,
            "facets": {"facets": [{"field": "behaviorRule", "size": 1000}]}}
    with server.client() as http:
        found = call(http, "ds/fsm_behavior_search", {"options": opts})
    rules = found.get("aggregations", {}).get("behaviorRule", {}).get("buckets", [])
    return {"behaviors": found["hits"]["total"], "rules_fired": len(rules)}


def _run(rules: str, part: DataSet, directory: Path, template: Path, *, clients: int) -> dict[str, Any]:
    from seclake.bench.ingest import http_ingest

    shutil.copytree(template, directory)
    server = Server(directory, directory.parent / "server.log")
    server.start()
    try:
        # Rules loaded, none run yet: what holding them takes.
        started = {"rss_kb": server.rss_kb(), "anon_kb": server.status_kb("RssAnon"), "seconds": server.started_seconds}
        row = http_ingest(server, part, clients=clients)
        row.update(rules=rules, after_start=started, rss_kb_after_ingest=server.rss_kb(),
                   anon_kb_after_ingest=server.status_kb("RssAnon"), **behaviors(server, part))
        return row
    finally:
        server.stop()
        shutil.rmtree(directory, ignore_errors=True)


def side_by_side(data: DataSet, directory: Path, max_lines: int | None, templates: dict[str, Path], *,
                 clients: int = 3, turns: tuple[str, ...] = TURNS) -> dict[str, Any]:
    """The HTTP ingest of one sample with the starter pack and with the Sigma rules, each run on a fresh
    server whose data dir is a copy of ``templates[rule set]``, in ``turns``: a row per rule set (its
    seconds and rates the means of its runs) and the ratio of their rates to searchable."""
    from seclake.bench.ingest import _mean_of

    part = proportional(data, directory / "sample", max_lines)
    runs: dict[str, list[dict[str, Any]]] = {"starter": [], "sigma": []}
    for n, rules in enumerate(turns):
        runs[rules].append(_run(rules, part, directory / f"{rules}-{n}", templates[rules], clients=clients))
    shutil.rmtree(directory / "sample", ignore_errors=True)
    out: dict[str, Any] = {"lines": part.lines, "sample_of": data.lines, "turns": list(turns)}
    for rules, rows in runs.items():
        row = _mean_of(rows)
        # Memory: the mean of the runs' (one server each), and the largest peak.
        for key in ("rss_kb_after_ingest", "anon_kb_after_ingest"):
            row[key] = sum(r[key] or 0 for r in rows) / len(rows)
        for key in ("rss_kb", "anon_kb", "seconds"):
            row["after_start"][key] = sum(r["after_start"][key] or 0 for r in rows) / len(rows)
        row["server_peak_rss_kb_after_ingest"] = max(r["server_peak_rss_kb_after_ingest"] or 0 for r in rows)
        out[rules] = row
    starter, sigma = out["starter"]["searchable_events_per_second"], out["sigma"]["searchable_events_per_second"]
    out["ratio"] = sigma / starter if starter and sigma else None
    out["target"] = TARGET
    out["memory_kb"] = {
        "after_start": out["sigma"]["after_start"]["rss_kb"] - out["starter"]["after_start"]["rss_kb"],
        "after_ingest": out["sigma"]["rss_kb_after_ingest"] - out["starter"]["rss_kb_after_ingest"],
        "peak": out["sigma"]["server_peak_rss_kb_after_ingest"] - out["starter"]["server_peak_rss_kb_after_ingest"],
    }
    return out


def stage(opts: Any, data: DataSet, sdir: Path, log: Any) -> dict[str, Any]:
    """The runner's Sigma stage at 1x: import SigmaHQ's rules once, then the two rule sets in turns;
    ``{"skipped": why}`` when SigmaHQ's archive is not there."""
    from seclake.detect.rule import load_rule_file
    from seclake.detect.rulebook import starter_pack

    where = Path(opts.sigma)
    tar = where if where.is_file() else archive(where)
    if tar is None:
        return {"skipped": f"no SigmaHQ archive (sigmahq-*.tar.gz) in {where.resolve()}"}
    out: dict[str, Any] = {"archive": tar.name, "select": list(opts.sigma_rules),
                           "starter_rules": sum(len(load_rule_file(p)) for p in starter_pack())}
    base = sdir / "sigma"
    with log.stage("1x: import SigmaHQ's rules (seclake rules import, once)"):
        paths = extract(tar, base / "sigmahq", tuple(opts.sigma_rules))
        out["import"] = import_rules(paths, base / "sigma-template", sdir / "sigma-import.log")
        shutil.rmtree(base / "sigmahq", ignore_errors=True)
        prepare(base / "starter-template", sdir / "sigma-import.log")
    with log.stage("1x: ingest with SigmaHQ's rules and with the starter pack, over HTTP, in turns"):
        out.update(side_by_side(data, base, opts.sigma_events,
                                {"starter": base / "starter-template", "sigma": base / "sigma-template"},
                                clients=opts.ingest_clients, turns=tuple(opts.sigma_turns)))
    shutil.rmtree(base, ignore_errors=True)
    return out


def section(one: dict[str, Any]) -> list[str]:
    """The report's lines for the Sigma stage (none when the run left it out)."""
    from seclake.bench.report import verdict

    s = one.get("ingest_sigma")
    lines = ["## Ingest with every SigmaHQ rule for the supported sources", ""]
    if not s:  # --sigma none, or a run from before the stage (its figures come with the next full run)
        return [*lines, "Not run: this run left it out (`--sigma none`) or was made before the stage existed.", ""]
    if "skipped" in s:
        return [*lines, f"Not run: {s['skipped']}.", ""]
    imp = s["import"]
    skipped = ", ".join(f"{reason} {n:,}" for reason, n in sorted(imp["skipped"].items(), key=lambda kv: -kv[1]))
    lines.append(
        f"SigmaHQ's rules from `{s['archive']}` (`{'`, `'.join(s['select'])}`): {imp['read']:,} read, "
        f"**{imp['imported']:,} imported and enabled** beside the {s['starter_rules']} starter rules"
        + (f"; skipped {imp['skipped_total']:,} ({skipped})" if imp.get("skipped_total") else "")
        + f"; `seclake rules import` took {imp['seconds']:.1f} s, once (each Sigma run starts from a copy of its "
        f"data dir). The same {s['lines']:,} lines (the first {s['lines'] / s['sample_of']:.0%} of every batch "
        f"file of the {s['sample_of']:,}) over HTTP to a fresh server with each rule set, in turns "
        f"({', '.join(s['turns'])}; each row the mean of its runs):")
    lines += ["", "| rules | events/s accepted | seconds to searchable (after last reply) | events/s to searchable "
              "| server CPU µs/line | server start s | RSS after start MB | RSS after the ingest MB | peak RSS MB "
              "| behaviors (rules fired) |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for key, title in (("starter", f"starter pack ({s['starter_rules']})"),
                       ("sigma", f"starter pack + SigmaHQ ({s['starter_rules'] + imp['imported']:,})")):
        row = s[key]
        lines.append(
            f"| {title} | {row['events_per_second']:,.0f} | {row['seconds_to_searchable']:.2f} | "
            f"{row['searchable_events_per_second']:,.0f} | {_server_us(row)} | {row['after_start']['seconds']:.1f} | "
            f"{row['after_start']['rss_kb'] / 1024:.0f} | {row['rss_kb_after_ingest'] / 1024:.0f} | "
            f"{row['server_peak_rss_kb_after_ingest'] / 1024:.0f} | {row['behaviors']:,} ({row['rules_fired']}) |")
    mem = s["memory_kb"]
    ratio = s.get("ratio")
    spent = (_server_us(s["starter"], None), _server_us(s["sigma"], None))
    matching = (f" The server's process (parsing, the rules, the log, HTTP: one interpreter) spent "
                f"{spent[1] - spent[0]:+.1f} µs of CPU per line more with them." if None not in spent else "")
    lines += ["", (f"With SigmaHQ's rules against the starter pack alone, to searchable: **{ratio:.2f}x**, "
                   f"target ≥ {s['target']}x: {verdict(ratio >= s['target'])}. " if ratio else "No ratio: a rate is missing. ")
              + f"What the rules take (server RSS, with them minus without): **{mem['after_start'] / 1024:+.0f} MB** "
              f"after the start (rules loaded), {mem['after_ingest'] / 1024:+.0f} MB after the ingest (matchers "
              f"compiled and run), peak {mem['peak'] / 1024:+.0f} MB." + matching, ""]
    return lines


def _server_us(row: dict[str, Any], missing: Any = "") -> Any:
    """The server process's CPU per line over a run (``cpu.CpuMeter``), or ``missing``."""
    us = ((row.get("cpu") or {}).get("us_per_line") or {}).get("server")
    if us is None:
        return missing
    return f"{us:.1f}" if missing == "" else us
