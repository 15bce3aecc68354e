"""Reading the AI-norms repository's published runs (Flint Ashery, Aiello and Baronchelli 2025;
github.com/Ariel-Flint-Ashery/AI-norms, MIT): its `data/*.zip` hold one pickle per condition.

A pickle can run any code it names, so these are read as data only: `PlainUnpickler` refuses
every global (no class, no function can be named, so nothing can be called while loading), and
what loads must be the builtin containers and values the paper's code wrote (dict, list,
str, int, float, bool, None), within bounds on bytes, nesting and element count. Zip members
are read into memory by name, never extracted onto disk. A refused or broken file is one
line, with the file named.

The file names carry the conditions (the paper's `runner.py` writes them):

    {model}_converged_baseline_{names}_{fail}_{success}_{H}mem_{network}_{N}ps_{T}tmp.pkl
    {model}_evolved_from_{i}_{names}_{fail}_{success}_{H}mem_{network}_{N}ps_{K}ints_{T}tmp.pkl
    {model}_swap_{i}_{C}cmtd_{names}_{fail}_{success}_{H}mem_{network}_{N}ps_{T}tmp.pkl

    {model}_no_memory_bias_test_{letters}_{H}mem.pkl
    {model}_bias_test_{own}_{partner}.pkl      (one memory state: own and partner names, oldest first)

A baseline starts from empty memories and ran until 72 straight successes (Fig. 1, 2); an
evolved or swap population starts in consensus on names[i] (every memory holds H successes
on it), swap with C agents committed to the other name (Fig. 3, S7); a bias test asked one
player with an empty memory again and again (Table S1, Fig. S5; its pool is one letter per
name); a strategy test asked a player with one fixed memory of Q and M (Table 1). Other
files (meta-prompting) are listed as skipped.
"""

from __future__ import annotations

import io
import pickle
import pickletools
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import UserError

MAX_FILE_BYTES = 64 << 20  # the largest published pickle is 1.5 MB
MAX_MEMBERS = 10_000
MAX_DEPTH = 16  # the paper's pickles nest 5 deep
MAX_ELEMENTS = 4_000_000  # every element visited, shared ones once per reference
PLAIN = (dict, list, str, int, float, bool, type(None))

# The shorthands the paper's files use, and the names the paper gives the models.
MODELS = {
    "llama2": "Llama-2-70b-Chat",
    "llama3": "Llama-3-70B-Instruct",
    "llama31": "Llama-3.1-70B-Instruct",
    "claude": "Claude-3.5-Sonnet",
}

_CONDITION = re.compile(
    r"^(?P<model>[A-Za-z0-9]+?)(?:_70b)?_"
    r"(?:(?P<baseline>converged_baseline)|evolved_from_(?P<evolved>\d+)|swap_(?P<swap>\d+)_(?P<committed>\d+)cmtd)_"
    r"(?P<names>.+?)_(?P<failure>-?\d+)_(?P<success>-?\d+)_(?P<memory>\d+)mem_(?P<network>[A-Za-z_]+?)_(?P<agents>\d+)ps"
    r"(?:_(?P<interactions>\d+)ints)?_(?P<temperature>\d+(?:\.\d+)?)tmp\.pkl$")


_BIAS_TEST = re.compile(r"^(?P<model>[A-Za-z0-9]+?)(?:_70b)?_no_memory_bias_test_(?P<names>[A-Za-z]+)_(?P<memory>\d+)mem\.pkl$")


_STRATEGY_TEST = re.compile(r"^(?P<model>[A-Za-z0-9]+?)(?:_70b)?_bias_test_(?P<own>[QM]+)_(?P<partner>[QM]+)\.pkl$")
STRATEGY_POOL = ("Q", "M")  # Table 1's pool: the strategy tests' names are letters of it


class UnsafePickleError(UserError):
    """A pickle that names a global or holds something other than plain data: never loaded."""


class PlainUnpickler(pickle.Unpickler):
    """Loads builtin containers and values only: naming any global (a class, a function,
    `os.system`) is refused before it is looked up, so a pickle can call nothing."""

    def find_class(self, module: str, name: str) -> Any:
        raise UnsafePickleError(f"names the global {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise UnsafePickleError("uses a persistent id")


# Extension codes: the C unpickler looks them up in copyreg's cache before `find_class`, so a
# function some code of this process once registered and loaded would be reached without the
# unpickler's refusal. A pickle holding one is refused before loading. (Every other way to a
# callable names a global, which `find_class` refuses, naming it.)
_CALLING_OPCODES = frozenset({"EXT1", "EXT2", "EXT4"})
# A pickle is a program for a stack machine: the unpickler's time grows with its opcodes and its
# memory with its stack (8 MiB of EMPTY_LIST is 8 million lists held at once: 750 MB). Both are
# bounded before any of it runs, far above what the paper's pickles take (the largest, 1.5 MB,
# nests 5 deep; pickle pushes at most 1,000 items per container before it appends them).
MAX_OPCODES = 4_000_000
MAX_STACK = 100_000


def _opcode_table() -> list[tuple[str, int, int, int, bool] | None]:
    """Per opcode byte: (name, its argument's size or how to read it, the items it pops below
    a mark it pops to (or -1: it pops to no mark), its change of the stack's depth, whether it
    pushes a mark)."""
    table: list[tuple[str, int, int, int, bool] | None] = [None] * 256
    for opcode in pickletools.opcodes:
        size = 0 if opcode.arg is None else opcode.arg.n
        before, after = opcode.stack_before, opcode.stack_after
        if pickletools.stackslice in before:  # pops everything down to the last mark, and the mark
            below = before.index(pickletools.markobject)
            table[ord(opcode.code)] = (opcode.name, size, below, len(after), False)
        else:
            pushes_mark = pickletools.markobject in after
            change = len([item for item in after if item is not pickletools.markobject]) - len(before)
            table[ord(opcode.code)] = (opcode.name, size, -1, change, pushes_mark)
    return table


_OPCODES = _opcode_table()
_LENGTHS = {pickletools.TAKEN_FROM_ARGUMENT1: (1, False), pickletools.TAKEN_FROM_ARGUMENT4: (4, True),
            pickletools.TAKEN_FROM_ARGUMENT4U: (4, False), pickletools.TAKEN_FROM_ARGUMENT8U: (8, False)}


def _scan(data: bytes) -> None:
    """Walk the pickle's opcodes as the unpickler would, without running them: refuse one that
    would reach a registered function, more than MAX_OPCODES of them, or a stack (marks
    included) deeper than MAX_STACK, as soon as it is seen. A broken stream stops the walk: the
    loader then says what is wrong in its own words."""
    position, end, depth, count = 0, len(data), 0, 0
    marks: list[int] = []
    while position < end:
        entry = _OPCODES[data[position]]
        if entry is None:
            return
        name, size, below, change, pushes_mark = entry
        position += 1
        count += 1
        if count > MAX_OPCODES:
            raise UnsafePickleError(f"takes more than {MAX_OPCODES} opcodes to load (the paper's largest takes far fewer)")
        if name in _CALLING_OPCODES:
            raise UnsafePickleError(f"holds the extension code opcode {name} (it would reach a registered function)")
        if size >= 0:
            position += size
        elif size == pickletools.UP_TO_NEWLINE:
            for _ in range(2 if name in ("GLOBAL", "INST") else 1):
                newline = data.find(b"\n", position)
                if newline < 0:
                    return
                position = newline + 1
        else:
            width, signed = _LENGTHS[size]
            length = int.from_bytes(data[position:position + width], "little", signed=signed)
            if length < 0:
                return
            position += width + length
        if below >= 0:
            if not marks:
                return
            depth = marks.pop() - below + change
        else:
            depth += change
            if pushes_mark:
                marks.append(depth)
        if depth < 0:
            return
        if depth + len(marks) > MAX_STACK:
            raise UnsafePickleError(f"builds a stack deeper than {MAX_STACK} to load (the paper's nest 5 deep)")
        if name == "STOP":
            return


def load_plain(data: bytes, where: str) -> Any:
    """The plain data a pickle holds, refused in one line (naming `where`) if it names a
    global, is broken, or holds anything but the builtin containers and values."""
    if len(data) > MAX_FILE_BYTES:
        raise UnsafePickleError(f"{where}: {len(data)} bytes is more than the {MAX_FILE_BYTES} a published run "
                                f"takes; not read")
    try:
        _scan(data)
        value = PlainUnpickler(io.BytesIO(data)).load()
    except UnsafePickleError as error:
        raise UnsafePickleError(f"{where}: refused, nothing was run: the pickle {error}, and only plain data "
                                f"(dicts, lists, strings, numbers) is read from published runs") from None
    except Exception as error:  # a truncated or corrupt pickle raises anything from EOFError to ValueError
        raise UserError(f"{where}: not a readable pickle ({type(error).__name__}: {error}); fetch the file again") \
            from None
    _check_plain(value, where)
    return value


def _check_plain(value: Any, where: str) -> None:
    """Only PLAIN types, nested at most MAX_DEPTH deep, MAX_ELEMENTS in all (a pickle can
    refer to one list a million times; each reference counts)."""
    budget = MAX_ELEMENTS
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        budget -= 1
        if budget < 0:
            raise UnsafePickleError(f"{where}: refused: more than {MAX_ELEMENTS} elements")
        if type(item) not in PLAIN:
            raise UnsafePickleError(f"{where}: refused: holds a {type(item).__name__}, not plain data")
        if isinstance(item, (dict, list)):
            if depth >= MAX_DEPTH:
                raise UnsafePickleError(f"{where}: refused: nested more than {MAX_DEPTH} deep")
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            budget -= len(children)
            if budget < 0:
                raise UnsafePickleError(f"{where}: refused: more than {MAX_ELEMENTS} elements")
            stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
            stack.extend((child, depth + 1) for child in children if type(child) not in PLAIN)


@dataclass(frozen=True)
class Condition:
    """What a file's name says about its runs."""

    model: str  # the paper's name for it
    shorthand: str
    kind: str  # "baseline", "evolved", "committed", "bias" (first choices) or "strategy" (one memory state)
    names: tuple[str, ...]
    failure_payoff: int
    success_payoff: int
    memory_length: int
    network: str
    agents: int
    temperature: float
    committed: int = 0
    initial: int | None = None  # the index of the name the population starts in consensus on
    interactions: int | None = None

    @property
    def majority(self) -> str | None:
        return None if self.initial is None else self.names[self.initial]

    @property
    def alternative(self) -> str | None:
        """The other name of a two-name pool that starts in consensus (the committed agents')."""
        if self.initial is None or len(self.names) != 2:
            return None
        return self.names[1 - self.initial]


def condition(file_name: str) -> Condition | None:
    """The conditions a file name gives, or None for a file that holds no population's runs."""
    match = _CONDITION.match(file_name)
    if match is None:
        return _bias_test(file_name)
    shorthand = match["model"]
    initial = match["evolved"] or match["swap"]
    names = tuple(match["names"].split("_"))
    if initial is not None and int(initial) >= len(names):
        return None
    return Condition(
        model=MODELS.get(shorthand, shorthand), shorthand=shorthand,
        kind="baseline" if match["baseline"] else "evolved" if match["evolved"] is not None else "committed",
        names=names, failure_payoff=int(match["failure"]), success_payoff=int(match["success"]),
        memory_length=int(match["memory"]), network=match["network"], agents=int(match["agents"]),
        temperature=float(match["temperature"]), committed=int(match["committed"] or 0),
        initial=None if initial is None else int(initial),
        interactions=int(match["interactions"]) if match["interactions"] else None)


def _bias_test(file_name: str) -> Condition | None:
    """A bias test's conditions: its pool (a letter per name), and the paper's payoffs and
    temperature, which its name does not carry."""
    match = _BIAS_TEST.match(file_name)
    if match is None or len(set(match["names"])) != len(match["names"]):
        return _strategy_test(file_name)
    shorthand = match["model"]
    return Condition(model=MODELS.get(shorthand, shorthand), shorthand=shorthand, kind="bias",
                     names=tuple(match["names"]), failure_payoff=-50, success_payoff=100,
                     memory_length=int(match["memory"]), network="complete", agents=2, temperature=0.5)


def _strategy_test(file_name: str) -> Condition | None:
    match = _STRATEGY_TEST.match(file_name)
    if match is None or len(match["own"]) != len(match["partner"]):
        return None
    shorthand = match["model"]
    return Condition(model=MODELS.get(shorthand, shorthand), shorthand=shorthand, kind="strategy",
                     names=STRATEGY_POOL, failure_payoff=-50, success_payoff=100,
                     memory_length=len(match["own"]), network="complete", agents=2, temperature=0.5)


@dataclass(frozen=True)
class SourceFile:
    """One pickle of a source: where it is (for messages and the record) and its bytes."""

    where: str  # `zip!member` or a path
    name: str  # the file name alone
    data: bytes


def source_files(source: Path) -> Iterator[SourceFile]:
    """Every .pkl under `source`: a zip file, a pickle, or a directory of either (recursively),
    in name order. Zip members are read into memory by name; nothing is extracted."""
    if not source.exists():
        raise UserError(f"'{source}' does not exist; give an AI-norms zip (data/llama31_data.zip) or a directory of them")
    if source.is_dir():
        paths = sorted(path for path in source.rglob("*") if path.suffix in (".zip", ".pkl") and path.is_file())
        if not paths:
            raise UserError(f"'{source}' holds no .zip or .pkl file; give the AI-norms repository's data/ directory")
    else:
        paths = [source]
    for path in paths:
        if path.suffix == ".pkl":
            yield SourceFile(str(path), path.name, _read_bounded(path))
        elif zipfile.is_zipfile(path):
            yield from _zip_members(path)
        else:
            raise UserError(f"'{path}' is neither a zip file nor a .pkl; give an AI-norms zip or a directory of them")


def _read_bounded(path: Path) -> bytes:
    if path.stat().st_size > MAX_FILE_BYTES:
        raise UnsafePickleError(f"{path}: {path.stat().st_size} bytes is more than the {MAX_FILE_BYTES} a published "
                                f"run takes; not read")
    return path.read_bytes()


def _zip_members(path: Path) -> Iterator[SourceFile]:
    try:
        with zipfile.ZipFile(path) as archive:
            members = [info for info in archive.infolist() if not info.is_dir() and info.filename.endswith(".pkl")
                       and not Path(info.filename).name.startswith("._")]  # macOS resource forks
            if len(members) > MAX_MEMBERS:
                raise UserError(f"{path}: {len(members)} pickles is more than the {MAX_MEMBERS} a published archive holds")
            for info in sorted(members, key=lambda member: member.filename):
                where = f"{path}!{info.filename}"
                if info.file_size > MAX_FILE_BYTES:
                    raise UnsafePickleError(f"{where}: {info.file_size} bytes is more than the {MAX_FILE_BYTES} a "
                                            f"published run takes; not read")
                with archive.open(info) as member:
                    data = member.read(MAX_FILE_BYTES + 1)  # the header's size may lie
                yield SourceFile(where, Path(info.filename).name, data)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as error:
        raise UserError(f"{path}: not a readable zip file ({error}); fetch it again") from None
