"""What ``seclake import`` reads: files, each with its vendor, type, customer and format.

Files named on the command line share the command's options. A manifest
(``--manifest sources.csv``) names many sources at once, so that one command
imports an archive of several vendors and customers: one start, one warm-up
of the build workers and one final flush, instead of one per source (a
command's start and stop cost about half a second, as much as importing
~7,000 lines). The manifest is CSV with a header row; ``path`` is required,
``vendor``, ``type``, ``customer`` and ``format`` are optional columns, and an
empty cell takes the command's option. A relative path is relative to the
manifest's own directory, so a manifest travels with its archive.

Every source is checked before anything is imported: a bad row is named by
line and column, and nothing is stored.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, replace
from pathlib import Path

from seclake.errors import ValidationFailed
from seclake.ingest.vendor import validate_vendor
from seclake.service.ingestion import check_customer, check_target

COLUMNS = ("path", "vendor", "type", "customer", "format")
# A manifest lists files, not records: far more rows than this is a mistake
# (a log file passed as the manifest), not an archive.
MAX_ROWS = 100_000
MAX_CELL = 4096


@dataclass(frozen=True)
class Source:
    path: Path
    vendor: str
    dataset: str
    fmt: str
    customer: str | None

    def checked(self, where: str) -> "Source":
        """This source with its vendor normalized; ValidationFailed naming ``where`` otherwise."""
        try:
            check_target(self.dataset, self.fmt)
            check_customer(self.customer)
            vendor = validate_vendor(self.vendor)
        except ValidationFailed as e:
            raise ValidationFailed(where, str(e)) from None
        if not self.path.is_file():
            raise ValidationFailed(f"{where}: path", f"{str(self.path)[:300]!r} is not a file")
        return replace(self, vendor=vendor)


def read_manifest(path: Path) -> list[tuple[int, dict[str, str]]]:
    """The rows of a manifest: (line number, column -> cell), blank rows left out."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(_rows(csv.reader(f, strict=True), path))
    except UnicodeDecodeError as e:
        raise ValidationFailed(str(path), f"not UTF-8 text (byte {e.start})") from None
    except csv.Error as e:
        raise ValidationFailed(str(path), f"not CSV: {e}") from None
    if not rows:
        raise ValidationFailed(str(path), "lists no files (a header row with a path column, then one row per file)")
    return rows


def _rows(reader, path: Path):
    header = next(reader, None)
    if header is None:
        return
    names = [h.strip().lower() for h in header]
    unknown = [n for n in names if n not in COLUMNS]
    if unknown or "path" not in names or len(set(names)) != len(names):
        raise ValidationFailed(
            f"{path} line 1",
            f"the header must name the column path and may name {', '.join(COLUMNS[1:])}, each once; got {header!r}"[:400],
        )
    for row in reader:
        line = reader.line_num
        if line > MAX_ROWS + 1:
            raise ValidationFailed(str(path), f"lists more than {MAX_ROWS:,} files")
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(names):
            raise ValidationFailed(f"{path} line {line}", f"has {len(row)} cells, the header {len(names)}")
        if any(len(cell) > MAX_CELL for cell in row):
            raise ValidationFailed(f"{path} line {line}", f"a cell is longer than {MAX_CELL} characters")
        yield line, dict(zip(names, (cell.strip() for cell in row)))


def sources(files: list[Path], manifest: Path | None, *, vendor: str, dataset: str, fmt: str,
            customer: str | None) -> list[Source]:
    """The files of the command line, then those of the manifest, each checked.
    ``vendor``, ``dataset``, ``fmt`` and ``customer`` are the command's options:
    every file of the command line has them, a manifest's empty cell takes them."""
    out = [Source(p, vendor, dataset, fmt, customer).checked(str(p)) for p in files]
    if manifest is not None:
        for line, row in read_manifest(manifest):
            where = f"{manifest} line {line}"
            if not row["path"]:
                raise ValidationFailed(f"{where}: path", "is empty")
            listed = Path(row["path"])
            source = Source(
                path=listed if listed.is_absolute() else manifest.parent / listed,
                vendor=row.get("vendor") or vendor,
                dataset=row.get("type") or dataset,
                fmt=row.get("format") or fmt,
                customer=row.get("customer") or customer,
            )
            out.append(source.checked(where))
    return out
