"""The explanation file: save, and the bounded reading of untrusted files.

A saved explanation is a zip of ``explanation.json`` (format, version, settings, statistics as
text, literal table, rules, pruning path, scorecard and its choice, teacher kind, seconds, progress history, the
sequences' layout) and ``arrays/<name>.npy`` (scores, held-out flags, statistic values, labels and the
sequences' columns): JSON plus numpy arrays, never pickle. :func:`write` writes one; :func:`read`
reads one back into the parts an :class:`~rudi_explain.explanation.Explanation` is made of.

Explanation files travel between people, so :func:`read` treats them as hostile. A zip entry can
claim any size and a run of zeros deflates a thousandfold, so nothing here trusts an entry before
checking it:

* only the entries the format names are opened; any other entry is ignored
  unread;
* the declared (uncompressed) sizes of those entries are added up from the
  zip directory and refused above a budget *before* any is decompressed;
* each ``.npy`` header is read first (a few hundred bytes) and its dtype and
  shape compared with what the JSON promises; only then is the data read,
  exactly the bytes that shape needs, and the entry's CRC checked;
* every JSON field read is checked for its type, naming the field when it is wrong.

Nothing is unpickled: object dtypes are refused from the header.
"""

from __future__ import annotations

import json
import zipfile
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

import numpy as np

from rudi_explain.data.alignment import name_users
from rudi_explain.data.saved import check_saved_event_arrays
from rudi_explain.data.sequences import Sequences
from rudi_explain.exceptions import InputError, InputTypeError, WriteError
from rudi_explain.explanation.job import JobProgress
from rudi_explain.explanation.result import FittedState
from rudi_explain.explanation.scorecard_choice import choice_from_meta
from rudi_explain.rules.literals import Literals
from rudi_explain.rules.pruning import PruningPath
from rudi_explain.rules.ruleset import RuleSet
from rudi_explain.rules.scorecard import Scorecard
from rudi_explain.statistics import Statistic
from rudi_explain.validation import check_whole, check_writable

__all__ = ["write", "read", "Saved", "ArchiveReader", "default_budget", "expect", "FORMAT", "FORMAT_VERSION"]

FORMAT = "rudi-explain/explanation"
FORMAT_VERSION = 1

#: Largest ``.npy`` header accepted (numpy's own default limit).
_MAX_HEADER = 10_000
#: Bytes every file may expand to, on top of the ratio below.
_BASE_BUDGET = 64 * 2**20
#: How many times its size on disk a file may expand to. The arrays of a real
#: explanation (float scores and values, a permutation of input rows) deflate
#: a few times at most; a 1000:1 ratio is the signature of padding.
_RATIO = 100


def default_budget(path: Path) -> int:
    """The default bound on the bytes :func:`rudi_explain.load` decompresses from ``path``."""
    return _BASE_BUDGET + _RATIO * path.stat().st_size


class ArchiveReader:
    """Reads named entries of an open zip within a byte budget.

    Parameters
    ----------
    zf : zipfile.ZipFile
    path : Path
        For messages.
    budget : int
        The most uncompressed bytes all reads together may produce.
    """

    def __init__(self, zf: zipfile.ZipFile, path: Path, budget: int) -> None:
        self.zf, self.path, self.budget, self.used = zf, path, budget, 0

    def info(self, name: str) -> zipfile.ZipInfo | None:
        """The directory entry of ``name``, or None when the file lacks it."""
        try:
            return self.zf.getinfo(name)
        except KeyError:
            return None

    def check_declared(self, names: list[str]) -> None:
        """Refuse before reading when the named entries declare more bytes than the budget."""
        declared = sum(i.file_size for i in map(self.info, names) if i is not None)
        if declared > self.budget:
            raise InputError(
                f"{self.path}: its entries would expand to {declared:,} bytes, more than the "
                f"{self.budget:,} allowed for a file of its size; if you trust it, pass "
                f"max_bytes={declared} to load()"
            )

    def _spend(self, n: int, name: str) -> None:
        if self.used + n > self.budget:
            raise InputError(
                f"{self.path}: reading {name} would exceed the {self.budget:,} bytes allowed "
                "(pass a larger max_bytes to load() if you trust the file)"
            )
        self.used += n

    def read_bytes(self, name: str) -> bytes:
        """All bytes of a small entry (the JSON), within the budget."""
        info = self.info(name)
        if info is None:
            raise KeyError(name)
        self._spend(info.file_size, name)
        try:
            with self.zf.open(info) as fp:
                data = fp.read(info.file_size + 1)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as err:
            raise InputError(f"{self.path}: entry {name} is damaged ({err})") from None
        if len(data) != info.file_size:
            raise InputError(f"{self.path}: entry {name} is damaged (its size differs from the declared one)")
        return data

    def read_array(self, name: str, kinds: str, shape: tuple[int | None, ...],
                   what: str) -> np.ndarray:
        """A ``.npy`` entry, checked against the dtype kinds and shape promised.

        Parameters
        ----------
        name : str
            Entry name inside the zip.
        kinds : str
            Accepted dtype kinds (``'f'``, ``'i'``, ``'b'``, ...).
        shape : tuple
            The expected shape; ``None`` in a place accepts any length there.
        what : str
            What the array is, for messages.
        """
        info = self.info(name)
        if info is None:
            raise InputError(f"{self.path} is damaged: it lacks {name} ({what})")
        try:
            with self.zf.open(info) as fp:
                version = np.lib.format.read_magic(fp)
                if version == (1, 0):
                    header = np.lib.format.read_array_header_1_0(fp, max_header_size=_MAX_HEADER)
                elif version in ((2, 0), (3, 0)):
                    header = np.lib.format.read_array_header_2_0(fp, max_header_size=_MAX_HEADER)
                else:
                    raise InputError(f"unknown .npy version {version}")
                array_shape, fortran, dtype = header
                if dtype.hasobject or dtype.kind not in kinds:
                    raise InputError(f"its dtype is {dtype}, expected kind {kinds!r}")
                if len(array_shape) != len(shape) or any(
                        want is not None and got != want for got, want in zip(array_shape, shape)):
                    promised = tuple("any" if s is None else s for s in shape)
                    raise InputError(f"its header declares shape {array_shape}, the file's JSON promises {promised}")
                nbytes = int(np.prod(array_shape, dtype=np.int64)) * dtype.itemsize
                start = fp.tell()
                if info.file_size != start + nbytes:
                    raise InputError(f"the entry declares {info.file_size:,} bytes, its shape needs "
                                     f"{start + nbytes:,}")
                self._spend(nbytes, name)
                data = fp.read(nbytes)
                # Reading past the end makes zipfile check the CRC.
                if len(data) != nbytes or fp.read(1):
                    raise InputError("its data is truncated")
        except ValueError as err:
            raise InputError(f"{self.path} is damaged: array {name} ({what}): {err}") from None
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as err:
            raise InputError(f"{self.path} is damaged: array {name} ({what}): {err}") from None
        array = np.frombuffer(data, dtype=dtype)
        array = array.reshape(array_shape, order="F" if fortran else "C")
        return np.ascontiguousarray(array.astype(dtype.newbyteorder("="), copy=True))


def expect(value: Any, types: type | tuple[type, ...], field: str, path: Path) -> Any:
    """``value`` when it has one of ``types``; a ValueError naming the field otherwise."""
    if isinstance(value, bool) and bool not in (types if isinstance(types, tuple) else (types,)):
        ok = False
    else:
        ok = isinstance(value, types)
    if not ok:
        names = " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))
        raise InputError(f"{path} is damaged: field {field!r} should be {names}, got {type(value).__name__}")
    return value


# ------------------------------------------------------------------ writing
def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return dict(value)
    raise InputTypeError(f"cannot save {type(value).__name__} in an explanation file")


def write(path: str | Path, sequences: Sequences, params: Mapping[str, Any], state: FittedState,
          history: Sequence[JobProgress]) -> Path:
    """Write one explanation file: JSON plus numpy arrays in a zip, never pickle.

    Parameters
    ----------
    path : str or Path
    sequences : Sequences
        The users explained.
    params : mapping
        The settings as saved (``"student"`` a name).
    state : FittedState
        What the job computed.
    history : sequence of JobProgress
        The job's progress events.

    Returns
    -------
    Path
        ``path``; a failed write leaves neither the file nor a partial one beside it.
    """
    path = Path(path)
    seq_meta, seq_arrays = sequences.to_arrays()
    meta = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "params": dict(params),
        "statistics": [str(s) for s in state.statistics],
        "literals": state.literals.to_dict(),
        "rules": state.rules.to_dict(),
        "teacher_kind": state.teacher_kind,
        "seconds": dict(state.seconds),
        "history": [{"stage": e.stage, "step": e.step, "total": e.total, "message": e.message,
                     "elapsed": e.elapsed} for e in history],
        "sequences": seq_meta,
        # null when not pruned; a file without the key predates saved pruning paths
        "pruning": None if state.pruning is None else state.pruning.to_dict(),
        "scorecard": None if state.scorecard is None else state.scorecard.to_dict(literals=False),
        "scorecard_choice": None if state.scorecard_choice is None else state.scorecard_choice.to_dict(),
    }
    arrays = {"teacher_scores": state.teacher_scores.to_numpy(), "student_scores": state.student_scores.to_numpy(),
              "is_test": state.is_test, "values": state.values,
              **{f"seq_{k}": v for k, v in seq_arrays.items()}}
    if state.labels is not None:
        arrays["labels"] = state.labels
    # Everything that can fail on the content fails here, before a file is opened.
    text = json.dumps(meta, default=_json_default)
    check_writable(path, "the explanation")
    tmp = path.with_name(path.name + ".partial")
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("explanation.json", text)
            for name, array in arrays.items():
                buffer = BytesIO()
                np.save(buffer, np.ascontiguousarray(array), allow_pickle=False)
                zf.writestr(f"arrays/{name}.npy", buffer.getvalue())
        tmp.replace(path)  # a failed save never leaves a half-written file under the name
    except OSError as err:  # a full disk, a read-only folder: named, and nothing left behind
        tmp.unlink(missing_ok=True)
        raise WriteError(f"cannot save the explanation to {path}: {err.strerror or err}") from None
    except BaseException:
        tmp.unlink(missing_ok=True)  # nor a .partial beside it
        raise
    return path


# ------------------------------------------------------------------ checking the JSON
#: fields and the JSON types each may hold
_TOP: tuple[tuple[str, Any], ...] = (
    ("params", dict), ("statistics", list), ("literals", dict), ("rules", dict), ("teacher_kind", str),
    ("seconds", dict), ("history", list), ("sequences", dict))
_EVENT: tuple[tuple[str, Any], ...] = (
    ("stage", str), ("step", int), ("total", int), ("message", str), ("elapsed", (int, float)))
_MOVE: tuple[tuple[str, Any], ...] = (("literal", int), ("from", (int, float)), ("to", (int, float)))
_LAYOUT: tuple[tuple[str, Any], ...] = (
    ("user_column", str), ("time_column", (str, type(None))), ("users", list), ("vocabularies", dict),
    ("categorical", list), ("numerical", list), ("time_dtype", (str, type(None))))


def _check_meta(meta: dict, path: Path) -> None:
    """Refuse JSON fields of the wrong type, naming the field (not a raw TypeError later)."""
    for key, types in _TOP:
        if key not in meta:
            raise InputError(f"{path} is damaged: it lacks the field {key!r}")
        expect(meta[key], types, key, path)
    for i, text in enumerate(meta["statistics"]):
        expect(text, str, f"statistics[{i}]", path)
        try:  # read (bounded: statistics/bounds.py) before any array is, so a huge one costs nothing
            Statistic.parse(text)
        except ValueError as err:
            raise InputError(f"{path} is damaged: field 'statistics[{i}]': {err}") from None
    for key, value in meta["seconds"].items():
        expect(value, (int, float), f"seconds.{key}", path)
    for i, e in enumerate(meta["history"]):
        expect(e, dict, f"history[{i}]", path)
        for key, types in _EVENT:
            expect(e.get(key), types, f"history[{i}].{key}", path)
    expect(meta["params"].get("student"), str, "params.student", path)
    for i, move in enumerate(expect(meta["params"].get("moved_thresholds", []), list, "params.moved_thresholds",
                                    path)):
        expect(move, dict, f"params.moved_thresholds[{i}]", path)
        for key, types in _MOVE:
            expect(move.get(key), types, f"params.moved_thresholds[{i}].{key}", path)
    sm = meta["sequences"]
    for key, types in _LAYOUT:
        expect(sm.get(key), types, f"sequences.{key}", path)
    for key in ("categorical", "numerical"):
        for i, name in enumerate(sm[key]):
            expect(name, str, f"sequences.{key}[{i}]", path)
    for name in sm["categorical"]:
        vocab = expect(sm["vocabularies"].get(name), list, f"sequences.vocabularies.{name}", path)
        if not all(isinstance(v, str) for v in vocab):
            raise InputError(f"{path} is damaged: field 'sequences.vocabularies.{name}' holds a non-text category")
    users = sm["users"]
    # The ids a Sequences allows: all text or all whole numbers.
    if not (all(isinstance(u, str) for u in users)
            or all(isinstance(u, int) and not isinstance(u, bool) for u in users)):
        raise InputError(f"{path} is damaged: field 'sequences.users' must hold only text or only whole numbers")
    if len(set(users)) != len(users):
        seen: set = set()
        dup = [u for u in users if u in seen or seen.add(u)]  # type: ignore[func-returns-value]
        raise InputError(f"{path} is damaged: field 'sequences.users' repeats user ids {name_users(dup)}")
    expect(meta["literals"].get("output_names"), list, "literals.output_names", path)
    if meta.get("pruning") is not None:
        _check_pruning(meta["pruning"], path)


def _check_rule_list(rs: Any, field: str, path: Path) -> None:
    """Types of one saved rule set of a pruning path: intercept, and rules of formula and weight."""
    expect(rs, dict, field, path)
    expect(rs.get("intercept"), (int, float), f"{field}.intercept", path)
    for i, r in enumerate(expect(rs.get("rules"), list, f"{field}.rules", path)):
        expect(r, dict, f"{field}.rules[{i}]", path)
        expect(r.get("formula"), dict, f"{field}.rules[{i}].formula", path)
        expect(r.get("weight"), (int, float), f"{field}.rules[{i}].weight", path)


def _check_pruning(pruning: Any, path: Path) -> None:
    """Types of the saved pruning path (:meth:`PruningPath.to_dict`), naming the field."""
    expect(pruning, dict, "pruning", path)
    _check_rule_list(pruning.get("unpruned"), "pruning.unpruned", path)
    for i, rs in enumerate(expect(pruning.get("rule_sets"), list, "pruning.rule_sets", path)):
        _check_rule_list(rs, f"pruning.rule_sets[{i}]", path)
    for i, n in enumerate(expect(pruning.get("n_rules"), list, "pruning.n_rules", path)):
        expect(n, int, f"pruning.n_rules[{i}]", path)
    for i, f in enumerate(expect(pruning.get("fidelity_valid"), list, "pruning.fidelity_valid", path)):
        expect(f, (int, float), f"pruning.fidelity_valid[{i}]", path)
    expect(pruning.get("fidelity_unpruned"), (int, float), "pruning.fidelity_unpruned", path)
    expect(pruning.get("default"), int, "pruning.default", path)
    expect(pruning.get("settings", {}), dict, "pruning.settings", path)


# ------------------------------------------------------------------ reading
@dataclass(frozen=True)
class Saved:
    """What an explanation file holds: the users, the settings, the result and the progress history."""

    sequences: Sequences
    params: dict
    state: FittedState
    history: list[JobProgress]


def _read_arrays(zf: zipfile.ZipFile, path: Path, max_bytes: int | None) -> tuple[dict, dict[str, np.ndarray]]:
    """The checked JSON and the arrays it promises, read within the byte budget."""
    reader = ArchiveReader(zf, path, default_budget(path) if max_bytes is None else int(max_bytes))
    try:
        raw = reader.read_bytes("explanation.json")
    except KeyError:
        raise InputError(f"{path} is not a rudi-explain explanation file (no explanation.json)") from None
    try:
        meta = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        raise InputError(f"{path} is not a rudi-explain explanation file (no readable explanation.json)") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise InputError(f"{path} is not a rudi-explain explanation file")
    if meta.get("version") != FORMAT_VERSION:
        raise InputError(f"{path} has format version {meta.get('version')}; this rudi-explain reads version "
                         f"{FORMAT_VERSION}")
    _check_meta(meta, path)
    sm = meta["sequences"]
    n_users, n_out = len(sm["users"]), len(meta["literals"]["output_names"])
    # (entry, dtype kinds, shape with None = n_events, what): the only entries read.
    wanted = [("teacher_scores", "fi", (n_users,), "teacher scores"),
              ("student_scores", "fi", (n_users,), "student scores"),
              ("is_test", "b", (n_users,), "held-out flags"),
              ("values", "f", (n_users, n_out), "statistic values"),
              ("seq_event_user", "iu", (None,), "user of each event"),
              ("seq_input_row", "iu", (None,), "input row of each event")]
    if sm["time_dtype"] is not None:
        wanted.append(("seq_times", "fiu", (None,), "event times"))
    wanted += [(f"seq_codes_{i}", "iu", (None,), f"codes of column {c!r}") for i, c in enumerate(sm["categorical"])]
    wanted += [(f"seq_values_{i}", "f", (None,), f"values of column {c!r}") for i, c in enumerate(sm["numerical"])]
    if reader.info("arrays/labels.npy") is not None:
        wanted.append(("labels", "fib", (n_users,), "labels"))
    reader.check_declared(["explanation.json", "arrays/seq_offsets.npy"] + [f"arrays/{w[0]}.npy" for w in wanted])
    offsets = reader.read_array("arrays/seq_offsets.npy", "iu", (n_users + 1,), "event offsets of each user")
    offsets = offsets.astype(np.int64)
    if len(offsets) and offsets[0] != 0 or (np.diff(offsets) < 0).any():
        bad = np.flatnonzero(np.diff(offsets) < 0)
        where = f" at user {name_users([sm['users'][bad[0]]])}" if len(bad) else ""
        raise InputError(f"{path} is damaged: array arrays/seq_offsets.npy does not start at 0 and "
                         f"never decrease{where}")
    n_events = int(offsets[-1])
    arrays = {"seq_offsets": offsets}
    for name, kinds, shape, what in wanted:
        shape = tuple(n_events if s is None else s for s in shape)
        arrays[name] = reader.read_array(f"arrays/{name}.npy", kinds, shape, what)
    check_saved_event_arrays(sm, arrays, path)
    return meta, arrays


def read(path: str | Path, *, max_bytes: int | None = None) -> Saved:
    """Read an explanation file written by :func:`write`, checking everything (see the module's notes).

    Parameters
    ----------
    path : str or Path
    max_bytes : int, optional
        The most bytes to decompress (default: :func:`default_budget`).

    Returns
    -------
    Saved

    Raises
    ------
    ValueError
        Naming the path and the damaged entry or field.
    """
    check_whole(max_bytes, "max_bytes", min_value=1, allow_none=True)  # before any byte is read
    path = Path(path)
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as err:
        raise InputError(f"{path} is not a rudi-explain explanation file ({err})") from None
    with zf:
        meta, arrays = _read_arrays(zf, path, max_bytes)
    sm = meta["sequences"]
    n_users, n_out = len(sm["users"]), len(meta["literals"]["output_names"])
    try:
        seqs = Sequences.from_arrays(sm, {k[4:]: v for k, v in arrays.items() if k.startswith("seq_")})
    except ValueError as err:
        raise InputError(f"{path} is damaged: {err}") from None
    parts: dict[str, Any] = {}
    for field_name, build in (
            ("statistics", lambda: [Statistic.parse(t) for t in meta["statistics"]]),
            ("literals", lambda: Literals.from_dict(meta["literals"])),
            ("rules", lambda: RuleSet.from_dict(meta["rules"])),  # no scorecard (an older file): read off the rules
            ("scorecard", lambda: None if meta.get("scorecard") is None
             else Scorecard.from_dict(meta["scorecard"], parts["literals"])),
            ("scorecard_choice", lambda: choice_from_meta(meta))):
        try:
            parts[field_name] = build()
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as err:
            raise InputError(f"{path} is damaged: field {field_name!r}: {err}") from None
    statistics, literals, rules, scorecard = parts["statistics"], parts["literals"], parts["rules"], parts["scorecard"]
    literals.statistics = statistics
    rules.literals = literals
    pruning, no_pruning = None, None
    if "pruning" not in meta:
        no_pruning = (f"{path} predates saved pruning paths: it has the explanation's rules but no fidelity "
                      "curve and no other points (explain again, or load it with the version that saved it)")
    elif meta["pruning"] is not None:
        try:
            pruning = PruningPath.from_dict(meta["pruning"], literals)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError, RecursionError) as err:
            raise InputError(f"{path} is damaged: field 'pruning': {err}") from None
    values = arrays["values"].astype(np.float64)
    if scorecard is not None and (wrong := scorecard.mismatch(rules, values)):
        raise InputError(f"{path} is damaged: field 'scorecard': {wrong}")
    history = [JobProgress(e["stage"], e["step"], e["total"], e["message"], {}, e["elapsed"])
               for e in meta["history"]]
    for name in ("teacher_scores", "student_scores"):
        if not np.isfinite(arrays[name]).all():
            raise InputError(f"{path} is damaged: array arrays/{name}.npy has NaN or infinite scores")
    is_test = arrays["is_test"].astype(bool)
    n_test = int(is_test.sum())
    if n_test < 2 or n_users - n_test < 2:
        raise InputError(f"{path} is damaged: array arrays/is_test.npy holds out {n_test} of {n_users} users; "
                         "fidelity needs at least two held-out and two training users")
    labels = None
    if "labels" in arrays:
        labels = arrays["labels"].astype(np.float64)
        if not np.isin(labels, (0.0, 1.0)).all():
            raise InputError(f"{path} is damaged: array arrays/labels.npy holds labels other than 0 and 1")
    if literals.n_outputs != n_out or (literals.output_statistic >= len(statistics)).any():
        raise InputError(f"{path} is damaged: field 'literals' does not match the statistics")
    params = dict(meta["params"])
    moved = params.pop("moved_thresholds", [])
    try:
        state = FittedState.from_values(
            seqs, statistics, literals, rules, values, arrays["teacher_scores"].astype(np.float64), is_test,
            student_scores=arrays["student_scores"].astype(np.float64), labels=labels, pruning=pruning,
            no_pruning_reason=no_pruning, teacher_kind=meta["teacher_kind"], seconds=meta["seconds"],
            moved_thresholds=moved, scorecard=scorecard, scorecard_choice=parts["scorecard_choice"])
    except (IndexError, ValueError) as err:
        raise InputError(f"{path} is damaged: field 'rules' refers to literals the file lacks ({err})") from None
    return Saved(seqs, params, state, history)
