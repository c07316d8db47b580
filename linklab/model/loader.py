"""Read a YAML file into a frozen model, collecting every problem with its path and line.

Pydantic's messages are rewritten into the form users act on:
    links[1].bond.mode (line 14): unknown mode 'rr' (valid: balance-rr, active-backup, ...)
"""

from __future__ import annotations

import copy
import functools
import typing
from pathlib import Path
from typing import Any, Callable, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from linklab.errors import ValidationFailed
from linklab.fsutil import read_text_input

M = TypeVar("M", bound=BaseModel)


def format_path(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


# Limits on what a YAML input may be, beside its size (linklab/fsutil.py: MAX_INPUT_BYTES). Real
# topologies and experiments nest under 10 levels with a handful of anchors; these bounds stop
# a hostile or broken file (`[[[[...` a million deep, a "billion laughs" alias bomb whose
# expansion would never finish) with an error instead of a hang or an exhausted memory.
MAX_DEPTH = 64
MAX_ALIASES = 100


class InputTooLarge(Exception):
    pass


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing more than MAX_ALIASES aliases or nesting beyond MAX_DEPTH."""

    def __init__(self, stream):
        super().__init__(stream)
        self._aliases = 0
        self._depth = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise yaml.YAMLError(f"more than {MAX_ALIASES} aliases (*name): refused, "
                                     "their expansion could exhaust memory")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                mark = self.peek_event().start_mark
                raise yaml.YAMLError(f"nested deeper than {MAX_DEPTH} levels (line {mark.line + 1})")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


MAX_NODES = 100_000


_ON_STACK = -1


def _expanded_size(node, memo: dict) -> int:
    """How many nodes the document has once every alias is expanded (what a consumer walks),
    computed in time linear in the *distinct* nodes: a few aliases can mean billions. A node
    that contains itself (a recursive alias) is refused: no setting is infinite."""
    key = id(node)
    if memo.get(key) == _ON_STACK:
        raise yaml.YAMLError(f"a recursive alias (line {node.start_mark.line + 1}): a value that contains itself")
    if key not in memo:
        memo[key] = _ON_STACK
        if isinstance(node, yaml.MappingNode):
            kids = [n for kv in node.value for n in kv]
        elif isinstance(node, yaml.SequenceNode):
            kids = node.value
        else:
            kids = []
        total = 1
        for k in kids:
            total += _expanded_size(k, memo)
            if total > MAX_NODES:
                break
        memo[key] = total
    return memo[key]


def _parse(text: str):
    loader = _BoundedLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}) > MAX_NODES:
            raise yaml.YAMLError(f"more than {MAX_NODES} values once its aliases are expanded: refused "
                                 "(an alias bomb?)")
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _compose(text: str):
    loader = _BoundedLoader(text)
    try:
        return loader.get_single_node()
    finally:
        loader.dispose()


# A sweep checks every point of its matrix against the topology (linklab/sweep/plan.py), each
# point a load of the same file with other overrides: parsing it once, not per point, saves
# seconds of pure-Python YAML parsing per sweep in the lab VM (bench/README.md#start-up-times).
# Keyed by the text itself, so an edited file is parsed again; callers get their own copy.
PARSE_CACHE_SIZE = 16


@functools.lru_cache(maxsize=PARSE_CACHE_SIZE)
def _parse_once(text: str):
    return _parse(text)


@functools.lru_cache(maxsize=PARSE_CACHE_SIZE)
def line_map(text: str) -> "LineMap":
    """The (read-only) LineMap of `text`, built once per text."""
    return LineMap(text)


class LineMap:
    """Path -> line number, from PyYAML's node tree (so errors can point into the file)."""

    def __init__(self, text: str):
        self.lines: dict[tuple, int] = {}
        self._seen: set[int] = set()
        try:
            root = _compose(text)
        except (yaml.YAMLError, RecursionError):
            root = None
        if root is not None:
            self._walk(root, ())

    def _walk(self, node, path):
        self.lines.setdefault(path, node.start_mark.line + 1)
        if id(node) in self._seen:  # an alias: its lines are known from the anchor (and it may recurse)
            return
        self._seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                key = k.value if isinstance(k, yaml.ScalarNode) else repr(k.value)
                self.lines[path + (key,)] = k.start_mark.line + 1
                self._walk(v, path + (key,))
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                self._walk(v, path + (i,))

    def line(self, loc: tuple) -> int | None:
        loc = tuple(loc)
        while loc:
            if loc in self.lines:
                return self.lines[loc]
            loc = loc[:-1]
        return None


def read_yaml(path: Path) -> tuple[Any, str]:
    text = read_text_input(Path(path))
    try:
        data = copy.deepcopy(_parse_once(text))
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        problem = getattr(e, "problem", None) or str(e)
        raise ValidationFailed(str(path), [f"not valid YAML{where}: {problem}"]) from None
    except RecursionError:
        raise ValidationFailed(str(path), [f"nested deeper than {MAX_DEPTH} levels"]) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValidationFailed(str(path), [f"(top level): expected a mapping of settings, got {type(data).__name__}"])
    return data, text


def _model_at(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    """The model class that owns the last key of `loc`, for 'valid keys' hints."""
    cur: Any = model
    for part in loc[:-1]:
        cur = _unwrap(cur)
        if isinstance(part, int):
            continue  # list index: the element type was already unwrapped
        if isinstance(cur, type) and issubclass(cur, BaseModel):
            field = _field_by_name(cur, part)
            if field is None:
                return None
            cur = field.annotation
        elif typing.get_origin(cur) is dict:
            cur = typing.get_args(cur)[1]
        else:
            return None
    cur = _unwrap(cur)
    return cur if isinstance(cur, type) and issubclass(cur, BaseModel) else None


def _field_by_name(model: type[BaseModel], name: str):
    for fname, f in model.model_fields.items():
        if name in (fname, f.alias):
            return f
    return None


def _unwrap(tp):
    """Strip Optional/Annotated/list wrappers down to the element model."""
    for _ in range(6):
        origin = typing.get_origin(tp)
        if origin is typing.Annotated:
            tp = typing.get_args(tp)[0]
        elif origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
            # A tagged union's branches are Annotated[Model, Tag(...)]: look through the tag.
            args = [typing.get_args(a)[0] if typing.get_origin(a) is typing.Annotated else a
                    for a in typing.get_args(tp) if a is not type(None)]
            models = [a for a in args if isinstance(a, type) and issubclass(a, BaseModel)]
            tp = models[0] if models else args[0]
        elif origin is list:
            tp = typing.get_args(tp)[0]
        else:
            break
    return tp


def _valid_keys(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def _clean_loc(loc: tuple) -> tuple:
    # Pydantic inserts union branch names ('Host', 'function-before[...]', 'float', 'literal[...]')
    # into locations; the user's file has none of those.
    out = []
    for part in loc:
        if isinstance(part, str) and (part[:1].isupper() or "[" in part or part in ("float", "int", "str", "bool")):
            continue
        out.append(part)
    return tuple(out)


BOUNDS = {
    "greater_than_equal": "must be at least {ge}", "less_than_equal": "must be at most {le}",
    "greater_than": "must be more than {gt}", "less_than": "must be less than {lt}",
    "too_short": "needs at least {min_length} items", "too_long": "takes at most {max_length} items",
}
TYPES = {"dict_type": "expected a mapping (name: settings)", "list_type": "expected a list",
         "int_parsing": "expected a whole number", "int_type": "expected a whole number",
         "float_parsing": "expected a number", "bool_parsing": "expected true or false",
         "string_type": "expected text", "model_type": "expected a mapping of settings"}


def pydantic_problems(err: ValidationError, model: type[BaseModel], prefix: tuple = ()) -> list[tuple[tuple, str]]:
    seen: dict[tuple, str] = {}
    for e in err.errors(include_url=False):
        loc = prefix + _clean_loc(tuple(e["loc"]))
        etype = e["type"]
        value = e.get("input")
        if etype == "extra_forbidden":
            owner = _model_at(model, loc[len(prefix):])
            valid = f" (valid: {', '.join(_valid_keys(owner))})" if owner else ""
            msg = f"unknown setting '{loc[-1] if loc else value}'{valid}"
        elif etype in ("literal_error", "enum"):
            expected = e.get("ctx", {}).get("expected", "")
            field = str(loc[-1]) if loc and isinstance(loc[-1], str) else "value"
            valid = expected.replace(" or ", ", ").replace("'", "")
            msg = f"unknown {field} {value!r} (valid: {valid})"
        elif etype == "missing":
            msg = "required setting is missing"
        elif etype == "value_error":
            msg = str(e.get("ctx", {}).get("error", e["msg"]))
        elif etype in TYPES:
            shown = type(value).__name__ if isinstance(value, (dict, list)) else repr(value)
            msg = f"{TYPES[etype]}, got {shown}"
        elif etype in BOUNDS:
            msg = BOUNDS[etype].format(**e.get("ctx", {})) + f", got {value!r}"
        else:
            msg = e["msg"][0].lower() + e["msg"][1:] if e["msg"] else etype
            if value is not None and not isinstance(value, (dict, list)):
                msg += f", got {value!r}"
        # Union types report one error per branch; keep the first (most specific) per location.
        seen.setdefault(loc, msg)
    return list(seen.items())


def _located(loc: tuple, msg: str, lines: LineMap | None) -> str:
    line = lines.line(loc) if lines else None
    at = f" (line {line})" if line else ""
    return f"{format_path(loc)}{at}: {msg}"


def load_model(path: Path | str, model: type[M], *, data: dict | None = None,
               checks: Callable[[M, list[int]], list[tuple[tuple, str]]] | None = None,
               itemwise: str | None = None, lenient: Callable[[dict, list], M | None] | None = None) -> M:
    """Load `path` (or already-parsed `data`, e.g. after overrides) into `model`.

    `itemwise` names a list field whose items are validated one by one, so that one bad item
    does not hide the cross-part problems of the others. `checks(obj, indices)` returns
    (loc, message) pairs for problems spanning several parts; `indices` maps the positions of
    the items that validated back to their positions in the file. Everything is reported at once.
    """
    if data is None:
        data, text = read_yaml(Path(path))
        lines = line_map(text)
    else:
        try:
            lines = line_map(Path(path).read_text())
        except OSError:
            lines = None
    problems: list[tuple[int, str]] = []

    def add(loc: tuple, msg: str) -> None:
        problems.append((lines.line(loc) or 0 if lines else 0, _located(loc, msg, lines)))

    items = data.get(itemwise) if itemwise else None
    good: list[tuple[int, Any]] = []
    head = data
    if itemwise and isinstance(items, list):
        item_model = _unwrap(model.model_fields[itemwise].annotation)
        for i, item in enumerate(items):
            try:
                good.append((i, item_model.model_validate(item)))
            except ValidationError as e:
                for loc, msg in pydantic_problems(e, item_model, prefix=(itemwise, i)):
                    add(loc, msg)
        head = {**data, itemwise: []}
    obj = None
    try:
        obj = model.model_validate(head)
    except ValidationError as e:
        for loc, msg in pydantic_problems(e, model):
            add(loc, msg)
    if obj is not None and itemwise and isinstance(items, list):
        obj = obj.model_copy(update={itemwise: [x for _, x in good]})
    elif obj is None and lenient is not None:
        # The head is invalid, but its good parts still let cross-part checks run.
        obj = lenient(data, [x for _, x in good])
    if obj is not None and checks:
        for loc, msg in checks(obj, [i for i, _ in good] if itemwise else []):
            add(loc, msg)
    if problems:
        problems = list(dict.fromkeys(problems))
        problems.sort(key=lambda p: p[0])  # file order: users fix top to bottom
        raise ValidationFailed(str(path), [p for _, p in problems])
    return obj

