"""Recall and false alarms of dslint on the labelled real-code set (benchmarks/realcode/MANIFEST.tsv).

    python benchmarks/realcode/measure.py                      # dslint from this checkout
    python benchmarks/realcode/measure.py --dslint-path /work/main --json figures.json
    python benchmarks/realcode/measure.py --layout-only        # only lay the snapshots out

Each MANIFEST row names a public repository at a fixed commit, a file, a line range, a rule code and a verdict:
`flag` (dslint should report that code there) or `clean` (it must stay silent there). The snapshots are bare git
mirrors (the `fetch` tool's /work/.mirror/OWNER+NAME/repo, or OWNER+NAME.git / OWNER+NAME under --mirror-root);
each is laid out at the row's commit into --root (a cache folder outside the repository). Blobs a shallow
snapshot lacks (large data files, images) are skipped. dslint then runs once per repository over the whole
folder, so launchers and configs are seen, with `--isolated` so a repository's own pyproject.toml cannot change
the selection. A row is found when dslint reports its code in its file on a line inside its range (or a code
its code was redirected to, when a rule was split or renamed after the manifest was written: `read_redirects`),
or names a line inside its range as a related location of the finding (where the finding's fact comes from: the
helper that loads a model, reported at the call that runs it before the ZeRO-3 arguments exist; the config key a
launch's arguments contradict, reported where the Trainer reads the config). A clean row is reported the same way.

Printed per rule and overall: flag rows found (recall), clean rows reported (false-alarm rate), and the number of
findings on lines no row labels (to review precision by hand).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
MANIFEST = HERE / "MANIFEST.tsv"
COLUMNS = ("repo", "commit", "path", "lines", "rule", "verdict", "group", "reason")
DEFAULT_MIRROR_ROOT = Path("/work/.mirror")
DEFAULT_ROOT = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "dslint-realcode"


@dataclass(frozen=True)
class Row:
    repo: str
    commit: str
    path: str
    first: int
    last: int
    rule: str
    verdict: str
    group: int
    reason: str


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    code: str
    related: tuple[tuple[str, int], ...] = ()  # (path, line) of each related location inside the repository

    def places(self) -> tuple[tuple[str, int], ...]:
        return ((self.path, self.line), *self.related)

    def lands_in(self, path: str, first: int, last: int) -> bool:
        return any(where == path and first <= line <= last for where, line in self.places())


@dataclass
class Tally:
    flags: int = 0
    found: int = 0
    cleans: int = 0
    false_alarms: int = 0
    unlabelled: int = 0
    missed: list[Row] = field(default_factory=list)
    alarms: list[Row] = field(default_factory=list)
    others: list[tuple[str, Finding]] = field(default_factory=list)
    # `NEW` flag rows (a mistake no code covered when labelled) that a finding of some code now lands on: shown
    # apart, never counted as found (the row's code is NEW; relabelling it after the run would tune to it).
    reached: list[tuple[Row, str]] = field(default_factory=list)

    def figures(self) -> dict[str, float | int | None]:
        return {
            "flag_rows": self.flags,
            "found": self.found,
            "recall": self.found / self.flags if self.flags else None,
            "clean_rows": self.cleans,
            "false_alarms": self.false_alarms,
            "false_alarm_rate": self.false_alarms / self.cleans if self.cleans else None,
            "unlabelled_findings": self.unlabelled,
        }


def read_manifest(path: Path) -> list[Row]:
    rows: list[Row] = []
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise SystemExit(f"{path}:1: columns must be {', '.join(COLUMNS)}")
        for number, record in enumerate(reader, start=2):
            first_text, _, last_text = record["lines"].partition("-")
            try:
                first = int(first_text)
                last = int(last_text) if last_text else first
                group = int(record["group"])
            except ValueError:
                raise SystemExit(f"{path}:{number}: lines and group must be numbers") from None
            if record["verdict"] not in ("flag", "clean"):
                raise SystemExit(f"{path}:{number}: verdict must be flag or clean")
            rows.append(
                Row(
                    record["repo"],
                    record["commit"],
                    record["path"],
                    first,
                    last,
                    record["rule"],
                    record["verdict"],
                    group,
                    record["reason"],
                )
            )
    return rows


def mirror_of(repo: str, mirror_root: Path) -> Path | None:
    name = repo.replace("/", "+")
    for candidate in (mirror_root / name / "repo", mirror_root / f"{name}.git", mirror_root / name):
        if (candidate / "HEAD").is_file():
            return candidate
    return None


def has_commit(mirror: Path, commit: str) -> bool:
    check = ["git", f"--git-dir={mirror}", "cat-file", "-e", f"{commit}^{{commit}}"]
    return subprocess.run(check, capture_output=True, check=False).returncode == 0


def folder_of(repo: str, commit: str, root: Path) -> Path:
    return root / f"{repo.replace('/', '__')}@{commit[:12]}"


def lay_out(mirror: Path, commit: str, target: Path) -> None:
    """Write every blob of `commit` that the mirror holds into `target` (missing large blobs are skipped, and
    files whose names the file system refuses)."""
    done = target / ".laid-out"
    if done.is_file():
        return
    git = ["git", f"--git-dir={mirror}"]
    listing = subprocess.run([*git, "ls-tree", "-r", "-z", commit], capture_output=True, check=True).stdout
    entries: list[tuple[str, str]] = []
    for item in listing.split(b"\0"):
        if not item:
            continue
        meta, _, raw_name = item.partition(b"\t")
        mode, kind, sha = meta.split(b" ")
        if kind == b"blob" and mode in (b"100644", b"100755"):
            entries.append((sha.decode(), raw_name.decode("utf-8", "surrogateescape")))
    request = "".join(f"{sha}\n" for sha, _ in entries).encode()
    batch = subprocess.run([*git, "cat-file", "--batch"], input=request, capture_output=True, check=True).stdout
    position = 0
    for _, name in entries:
        end = batch.index(b"\n", position)
        header = batch[position:end].split(b" ")
        position = end + 1
        if header[-1] == b"missing":
            continue
        size = int(header[2])
        path = target / name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(batch[position : position + size])
        except OSError as error:  # a name this file system refuses (too long): skipped, as a missing blob is
            print(f"not laid out: {path} ({error.strerror})", file=sys.stderr)
        position += size + 1
    done.write_text(commit + "\n", encoding="utf-8")


SEVERITIES = ("info", "warning", "error")


def run_dslint(folder: Path, dslint_path: Path | None, min_severity: str = "info") -> list[Finding]:
    env = dict(os.environ)
    env["DSLINT_NO_CACHE"] = "1"  # the snapshots are read-only: no result cache is written into them
    if dslint_path is not None:
        env["PYTHONPATH"] = str(dslint_path) + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as temporary:
        report = Path(temporary) / "report.json"
        argv = [sys.executable, "-m", "dslint", "check", "--isolated", "--exit-zero", "--quiet"]
        argv += ["--output-format", "json", "-o", str(report), "."]
        result = subprocess.run(argv, cwd=folder, env=env, capture_output=True, text=True, check=False)
        if not report.is_file():
            raise SystemExit(f"dslint failed on {folder}: {result.stderr.strip()}")
        data = json.loads(report.read_text(encoding="utf-8"))
    findings: list[Finding] = []
    for item in data:
        if SEVERITIES.index(str(item.get("severity", "error"))) < SEVERITIES.index(min_severity):
            continue
        filename = Path(item["filename"])
        relative = filename.relative_to(folder) if filename.is_absolute() else filename
        line = int(item["location"]["line"])
        if "cell" in item:  # a notebook's finding: rows carry the .ipynb file's own line
            line = notebook_line(folder / relative, int(item["cell"]), line, dslint_path)
        findings.append(Finding(relative.as_posix(), line, str(item["code"]), _related(folder, item, dslint_path)))
    return findings


def _related(folder: Path, item: dict, dslint_path: Path | None) -> tuple[tuple[str, int], ...]:
    """The finding's related locations inside `folder`, as (relative path, line)."""
    places = []
    for related in item.get("related") or ():
        filename = Path(related["filename"])
        try:
            relative = filename.relative_to(folder) if filename.is_absolute() else filename
        except ValueError:  # a file outside the repository (a config given by an absolute path elsewhere)
            continue
        line = int(related["location"]["line"])
        if "cell" in related:
            line = notebook_line(folder / relative, int(related["cell"]), line, dslint_path)
        places.append((relative.as_posix(), line))
    return tuple(places)


def notebook_line(path: Path, cell: int, line: int, dslint_path: Path | None) -> int:
    """The line of the notebook file holding line `line` of cell `cell` (1-based among all cells): the line of
    that element of the cell's `source` list (a source written as one string: the string's line)."""
    if dslint_path is not None and str(dslint_path) not in sys.path:
        sys.path.insert(0, str(dslint_path))
    from dslint.config.tree import Array, Object, parse_text

    tree = parse_text(path.read_text(encoding="utf-8"))
    cells = tree.get("cells") if isinstance(tree, Object) else None
    if not isinstance(cells, Array) or not 0 < cell <= len(cells.items):
        return line
    node = cells.items[cell - 1]
    source = node.get("source") if isinstance(node, Object) else None
    if isinstance(source, Array) and 0 < line <= len(source.items):
        return source.items[line - 1].start.line
    return source.start.line if source is not None else line


def read_redirects(dslint_path: Path | None) -> dict[str, tuple[str, ...]]:
    """The measured dslint's code redirects (`dslint.framework.catalog.REDIRECTS`: an old code -> the codes that now
    cover it), so that a frozen manifest naming a code that was split or renamed is measured by its successors;
    none for a checkout older than the redirects."""
    env = dict(os.environ)
    if dslint_path is not None:
        env["PYTHONPATH"] = str(dslint_path) + os.pathsep + env.get("PYTHONPATH", "")
    program = (
        "import json\n"
        "try:\n    from dslint.framework.catalog import REDIRECTS\nexcept ImportError:\n    REDIRECTS = {}\n"
        "print(json.dumps({old: list(r.to) for old, r in REDIRECTS.items()}))"
    )
    result = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True)
    return {old: tuple(to) for old, to in json.loads(result.stdout).items()}


def measure(
    rows: list[Row],
    findings: dict[tuple[str, str], list[Finding]],
    redirects: dict[str, tuple[str, ...]] | None = None,
) -> dict[str, Tally]:
    """Each row is found by a finding of its code, or of any code its code was redirected to (`redirects`)."""
    tallies: dict[str, Tally] = defaultdict(Tally)
    labelled: set[tuple[str, str, str, int]] = set()
    for row in rows:
        key = (row.repo, row.commit)
        codes = (redirects or {}).get(row.rule, (row.rule,))
        hit = any(f.code in codes and f.lands_in(row.path, row.first, row.last) for f in findings[key])
        if row.rule == "NEW" and row.verdict == "flag":
            landing = sorted({f.code for f in findings[key] if f.lands_in(row.path, row.first, row.last)})
            if landing:
                tallies["NEW"].reached.append((row, ",".join(landing)))
        for line in range(row.first, row.last + 1):
            labelled.update((row.repo, row.path, code, line) for code in codes)
        for name in (row.rule, f"group {row.group}", "overall"):
            tally = tallies[name]
            if row.verdict == "flag":
                tally.flags += 1
                tally.found += hit
                if not hit:
                    tally.missed.append(row)
            else:
                tally.cleans += 1
                tally.false_alarms += hit
                if hit:
                    tally.alarms.append(row)
    for (repo, _), found in findings.items():
        for f in found:
            if not any((repo, path, f.code, line) in labelled for path, line in f.places()):
                tallies[f.code].unlabelled += 1
                tallies["overall"].unlabelled += 1
                tallies["overall"].others.append((repo, f))
    return dict(tallies)


def percent(value: float | int | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def print_table(tallies: dict[str, Tally], verbose: bool) -> None:
    print(f"{'rule':<8} {'flag':>5} {'found':>6} {'recall':>7} {'clean':>6} {'alarms':>7} {'rate':>6} {'unlab.':>7}")
    for name in sorted(tallies, key=lambda n: (n == "overall", n.startswith("group"), n)):
        figures = tallies[name].figures()
        print(
            f"{name:<8} {figures['flag_rows']:>5} {figures['found']:>6} {percent(figures['recall']):>7} "
            f"{figures['clean_rows']:>6} {figures['false_alarms']:>7} {percent(figures['false_alarm_rate']):>6} "
            f"{figures['unlabelled_findings']:>7}"
        )
    new = tallies.get("NEW")
    if new is not None and new.flags:
        shown = f"{len(new.reached)}/{new.flags}"
        print(f"NEW rows with a finding of some code on their lines (not counted as found): {shown}")
    if verbose:
        for row, codes in new.reached if new is not None else ():
            print(f"new reached: {codes} {row.repo} {row.path}:{row.first}-{row.last}")
        overall = tallies.get("overall", Tally())
        for label, listed in (("missed", overall.missed), ("false alarm", overall.alarms)):
            for row in listed:
                print(f"{label}: {row.rule} {row.repo} {row.path}:{row.first}-{row.last}  ({row.reason})")
        for repo, finding in sorted(overall.others, key=lambda item: (item[0], item[1].path, item[1].line)):
            print(f"unlabelled: {finding.code} {repo} {finding.path}:{finding.line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--mirror-root", type=Path, default=DEFAULT_MIRROR_ROOT, help="where the bare snapshots are")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="where snapshots are laid out")
    parser.add_argument("--dslint-path", type=Path, help="a dslint checkout to measure (default: the importable one)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--min-severity", choices=SEVERITIES, default="info", help="ignore findings below this")
    parser.add_argument("--layout-only", action="store_true", help="lay the snapshots out and stop")
    parser.add_argument("-v", "--verbose", action="store_true", help="list misses, false alarms, unlabelled findings")
    args = parser.parse_args()

    rows = read_manifest(args.manifest)
    snapshots = sorted({(row.repo, row.commit) for row in rows})
    missing = [repo for repo, _ in snapshots if mirror_of(repo, args.mirror_root) is None]
    if missing:
        print(f"missing snapshots under {args.mirror_root} (rows of these are not measured):", file=sys.stderr)
        for repo in sorted(set(missing)):
            print(f"  {repo}: fetch it (the `fetch` tool with github:{repo}, or", file=sys.stderr)
            target = args.mirror_root / f"{repo.replace('/', '+')}.git"
            print(f"    git clone --bare https://github.com/{repo} {target})", file=sys.stderr)
    present = []
    for repo, commit in snapshots:
        mirror = mirror_of(repo, args.mirror_root)
        if mirror is None:
            continue
        if not has_commit(mirror, commit):
            print(f"  {repo}: {mirror} lacks commit {commit}; its rows are not measured", file=sys.stderr)
            continue
        present.append((repo, commit))
    findings: dict[tuple[str, str], list[Finding]] = {}
    for repo, commit in present:
        mirror = mirror_of(repo, args.mirror_root)
        assert mirror is not None
        folder = folder_of(repo, commit, args.root)
        lay_out(mirror, commit, folder)
        if not args.layout_only:
            findings[(repo, commit)] = run_dslint(folder, args.dslint_path, args.min_severity)
    if args.layout_only:
        for repo, commit in present:
            print(folder_of(repo, commit, args.root))
        return
    measured = [row for row in rows if (row.repo, row.commit) in findings]
    tallies = measure(measured, findings, read_redirects(args.dslint_path))
    repos = len({row.repo for row in measured})
    source = args.dslint_path or "the importable checkout"
    print(f"{len(measured)} rows from {repos} repositories; dslint from {source}")
    print_table(tallies, args.verbose)
    if args.json:
        payload = {name: tally.figures() for name, tally in tallies.items()}
        args.json.write_text(json.dumps(payload, indent=2, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
