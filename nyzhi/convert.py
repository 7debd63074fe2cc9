"""The one converter between nyzhi's attrs records and JSON: what we persist and what we send.

Every record written to disk (team configs, members, inboxes, tasks, session metadata, the
state record, the environment snapshot) and every event (stream-json lines, session logs,
a process teammate's output) goes through here, and so does validation of what is read back;
the coming WebSocket and editor protocols are meant to use it too.
It is cattrs' preconfigured JSON converter with nyzhi's rules on top:

* scalars are strict both ways: no ``str(5)`` for a string, no ``true`` for an integer, no
  string iterated as an array or table;
* a class's format is declared next to it with ``wire(cls, ...)``: keys renamed (``from``,
  ``blockedBy``), older keys still read (``aliases``), fields left out while ``None``, a tag
  written first (an event's ``type``), a null read as missing, per-field read or write hooks
  where a format needs one;
* a record that does not fit raises ``RecordError`` with one line naming the source (a file,
  an event type) and the field: ``.../config.json: 'members[0].name' is missing``.

Why a module of its own, beside ``nyzhi.records`` at the package root: ``config`` is the
bottom layer, and ``teams`` and ``core`` above it both need the converter, so it sits under
all of them and imports nothing of nyzhi's. Record modules declare their formats with ``wire``
(cheap: it only stores the declaration); cattrs is imported, and each class's functions are
generated, at the first ``structure``/``unstructure`` call. A ``nyz run`` that serialises
nothing before its first request (no session log, text output) never imports cattrs.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

if TYPE_CHECKING:
    from cattrs.preconf.json import JsonConverter

T = TypeVar("T")
Hook = Callable[[Any], Any]


class RecordError(ValueError):
    """A value read back does not fit its record; ``str()`` is one line naming the source and
    the field."""


@attrs.frozen
class Wire:
    """How one attrs class is written and read (see ``wire``)."""

    rename: Mapping[str, str] = attrs.field(factory=dict)
    aliases: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict)
    omit_if_none: tuple[str, ...] = ()
    tag: str | None = None
    null_is_missing: bool = False
    defaults: Mapping[str, Any] = attrs.field(factory=dict)
    required: tuple[str, ...] = ()
    read: Mapping[str, Callable[[Any], Any]] = attrs.field(factory=dict)
    write: Mapping[str, Hook] = attrs.field(factory=dict)
    unstructure: Hook | None = None


_WIRES: dict[type, Wire] = {}
_lock = threading.Lock()


def wire(
    cls: type | None = None, *, rename: Mapping[str, str] | None = None,
    aliases: Mapping[str, tuple[str, ...]] | None = None, omit_if_none: tuple[str, ...] = (),
    tag: str | None = None, null_is_missing: bool = False,
    defaults: Mapping[str, Any] | None = None, required: tuple[str, ...] = (),
    read: Mapping[str, Callable[[Any], Any]] | None = None,
    write: Mapping[str, Hook] | None = None, unstructure: Hook | None = None,
) -> Any:
    """Declare ``cls``'s JSON format (a class decorator, or called with the class). Applies to
    subclasses that declare none of their own.

    ``rename``: attribute -> key. ``aliases``: key -> older keys read when it is absent.
    ``omit_if_none``: attributes left out while ``None``. ``tag``: a class attribute written
    first under that key (events' ``type``). ``null_is_missing``: a JSON ``null`` reads as an
    absent key (the default applies). ``defaults``: key -> the value read when it is absent
    (tolerant of older writers, where the class itself has no default). ``required``: keys
    that must be present although the class has a default. ``read``/``write``: attribute -> a function from the
    JSON value to the field's value, or back, where the format is not the field's type.
    ``unstructure``: the whole write, for a class whose format is not its fields."""
    spec = Wire(
        rename=rename or {}, aliases=aliases or {}, omit_if_none=omit_if_none, tag=tag,
        null_is_missing=null_is_missing, defaults=defaults or {}, required=required,
        read=read or {}, write=write or {},
        unstructure=unstructure,
    )

    def apply(c: type) -> type:
        _WIRES[c] = spec
        return c

    return apply if cls is None else apply(cls)


def _wire_of(cls: type) -> Wire:
    for base in cls.__mro__:
        spec = _WIRES.get(base)
        if spec is not None:
            return spec
    return Wire()


def unstructure(obj: Any) -> Any:
    """``obj`` as plain JSON-ready data (dicts, lists, strings, numbers, booleans, None)."""
    return _bound[0](obj)


def prepare(*classes: type) -> None:
    """Make the functions that write ``classes`` now, not at their first ``unstructure``.

    cattrs generates (compiles) a class's function at its first use, a few tenths of a
    millisecond each: a front end calls this while it opens (``nyz acp``'s session), so the
    first streamed update of a prompt does not pay it."""
    _converter()
    for cls in classes:
        _unstructure_hook(cls)


def structure(data: Any, cls: type[T], source: object, error: type[ValueError] = RecordError) -> T:
    """``data`` (parsed JSON) as a ``cls``, checked; ``error`` (a ``RecordError`` unless the
    caller's package has its own) with one line naming ``source`` and the field otherwise."""
    try:
        return _bound[1](cls)(data, cls)
    except Exception as exc:  # cattrs' errors are ExceptionGroups of these
        if isinstance(exc, TypeError | ValueError | KeyError | AttributeError | ExceptionGroup):
            raise error(f"{source}: {describe(exc)}") from None
        raise


def describe(exc: BaseException) -> str:
    """A cattrs validation error as one line: the first problem with its field path, and how
    many more there are."""
    problems = list(_problems(exc, ""))
    first = problems[0] if problems else str(exc)
    more = len(problems) - 1
    return first + (f" (and {more} more problem{'s' * (more > 1)})" if more > 0 else "")


# ---- the converter -----------------------------------------------------------------------


class _Mismatch(TypeError):
    """A value of the wrong JSON type (``must be a string, found 5``)."""


_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "a boolean",
          list: "an array", dict: "an object"}


def _mismatch(expected: type, value: Any) -> _Mismatch:
    return _Mismatch(f"must be {_NAMES.get(expected, expected.__name__)}, found {value!r:.80}")


def _strict(t: type) -> Callable[[Any, Any], Any]:
    def hook(value: Any, _: Any) -> Any:
        if type(value) is t:
            return value
        if t is float and type(value) is int:
            return float(value)
        raise _mismatch(t, value)

    return hook


def _problems(exc: BaseException, path: str) -> Any:
    import cattrs
    from cattrs.errors import AttributeValidationNote, IterableValidationNote

    if isinstance(exc, cattrs.ClassValidationError | cattrs.IterableValidationError):
        keys = _wire_of(exc.cl).rename if isinstance(exc, cattrs.ClassValidationError) else {}
        for sub in exc.exceptions:
            note = next((n for n in getattr(sub, "__notes__", ()) if isinstance(
                n, AttributeValidationNote | IterableValidationNote)), None)
            if isinstance(note, AttributeValidationNote):
                name = keys.get(note.name, note.name)
                here = f"{path}.{name}" if path else name
            elif isinstance(note, IterableValidationNote):
                here = f"{path}[{note.index!r}]" if isinstance(note.index, str) else \
                    f"{path}[{note.index}]"
            else:
                here = path
            yield from _problems(sub, here)
        return
    where = f"'{path}' " if path else ""
    if isinstance(exc, KeyError):
        yield f"{where}is missing" if path else f"missing key {exc}"
    elif isinstance(exc, _Mismatch):
        yield f"{where}{exc}"
    elif isinstance(exc, cattrs.ForbiddenExtraKeysError):
        yield f"{where}has unknown keys {sorted(exc.extra_fields)}"
    else:
        text = str(exc) or type(exc).__name__
        if not path:
            yield text
        else:  # a hook's own "must be ..." reads on from the field's name
            yield f"{where}{text}" if text.startswith("must ") else f"'{path}': {text}"


def _container_check(base_factory: Callable[[Any, Any], Any], kind: type) -> Callable:
    """Wrap cattrs' structuring of a list, tuple or dict with a check that the JSON value is
    an array (object), so a string is never read as an array of its characters."""
    accepted = (list, tuple) if kind is list else dict

    def factory(t: Any, conv: Any) -> Callable[[Any, Any], Any]:
        base = base_factory(t, conv)

        def hook(value: Any, cl: Any) -> Any:
            if not isinstance(value, accepted):
                raise _mismatch(kind, value)
            return base(value, cl)

        return hook

    return factory


def _any_dict(value: Any, _: Any) -> dict[str, Any]:
    if type(value) is not dict:
        raise _mismatch(dict, value)
    return dict(value)


_PLAIN = frozenset({str, int, float, bool, type(None)})


def _any_dict_out(value: dict[str, Any]) -> dict[str, Any]:
    """An object of anything, written: plain values copied as they are, others (a nested
    object, a list, a record such as the environment snapshot) through the converter."""
    return {k: v if v.__class__ in _PLAIN else _bound[0](v) for k, v in value.items()}


def _class_unstructure(cls: type, conv: Any) -> Hook:
    from cattrs.gen import make_dict_unstructure_fn, override

    spec = _wire_of(cls)
    if spec.unstructure is not None:
        return spec.unstructure
    overrides = {}
    for field in attrs.fields(cls):
        name = field.name
        if name in spec.rename or name in spec.omit_if_none or name in spec.write:
            overrides[name] = override(
                rename=spec.rename.get(name), omit_if_default=name in spec.omit_if_none or None,
                unstruct_hook=spec.write.get(name),
            )
    fn = make_dict_unstructure_fn(cls, conv, **overrides)
    if spec.tag is None:
        return fn
    key, value = spec.tag, getattr(cls, spec.tag)

    def tagged(obj: Any) -> dict[str, Any]:
        return {key: value, **fn(obj)}

    return tagged


def _class_structure(cls: type, conv: Any) -> Callable[[Any, Any], Any]:
    from cattrs.gen import make_dict_structure_fn, override

    spec = _wire_of(cls)
    overrides = {}
    for field in attrs.fields(cls):
        name = field.name
        if name in spec.rename or name in spec.read:
            read = spec.read.get(name)
            overrides[name] = override(
                rename=spec.rename.get(name),
                struct_hook=(lambda v, _t, r=read: r(v)) if read is not None else None,
            )
    # Two functions: a fast one without cattrs' per-field bookkeeping for the usual case, and,
    # made only when that one fails, the detailed one, run again for the field's path.
    fast = make_dict_structure_fn(cls, conv, _cattrs_detailed_validation=False, **overrides)
    detailed: list[Callable[[Any, Any], Any]] = []
    plain = not (spec.aliases or spec.null_is_missing or spec.defaults or spec.required)

    def hook(value: Any, cl: Any) -> Any:
        if not isinstance(value, dict):
            raise _mismatch(dict, value)
        if not plain:
            value = _normalised(value, spec, cl)
        try:
            return fast(value, cl)
        except Exception:
            if not detailed:
                detailed.append(make_dict_structure_fn(
                    cls, conv, _cattrs_detailed_validation=True, **overrides))
            return detailed[0](value, cl)  # raises again, with the path

    return hook


def _normalised(value: dict, spec: Wire, cl: type) -> dict:
    """``value`` with nulls dropped, older keys read, defaults filled; a missing required key
    raised as cattrs would (so the message names it)."""
    if spec.null_is_missing:
        value = {k: v for k, v in value.items() if v is not None}
    for key, older in spec.aliases.items():
        if key not in value:
            for name in older:
                if value.get(name) is not None:
                    value = {**value, key: value[name]}
                    break
    missing = [key for key in spec.required if key not in value]
    if missing:
        import cattrs
        from cattrs.errors import AttributeValidationNote

        errors = []
        for key in missing:
            exc = KeyError(key)
            exc.__notes__ = [AttributeValidationNote(f"missing {key}", key, Any)]
            errors.append(exc)
        raise cattrs.ClassValidationError(f"While structuring {cl.__name__}", errors, cl)
    return {**spec.defaults, **value} if spec.defaults else value


@functools.cache
def _members(t: Any) -> tuple[dict[Any, Any], str]:
    return {m.value: m for m in t}, ", ".join(str(m.value) for m in t)


def _enum_structure(value: Any, t: Any) -> Any:
    """An enum by its value, strictly (``"done"`` is not a task status)."""
    members, allowed = _members(t)
    try:
        return members[value]
    except (KeyError, TypeError):
        raise ValueError(f"must be one of {allowed}, found {value!r:.80}") from None


def _first_unstructure(obj: Any) -> Any:
    _converter()
    return _unstructured(obj)


def _first_structure(cls: Any) -> Any:
    _converter()
    return _structure_hook(cls)


# Each type's function, made once and kept. Not cattrs' own cache: cattrs empties it whenever
# it meets a container type (a ``tuple[...]`` field) for the first time and registers its
# function, so every class's function was compiled again, mid-stream, each time a new kind of
# record was first written (a few tenths of a millisecond per class). Every hook nyzhi
# registers is registered in ``_build``, before the first function is made, so a function
# once made is the one cattrs would make again.
_unstructure_hooks: dict[Any, Hook] = {}
_structure_hooks: dict[Any, Callable[[Any, Any], Any]] = {}


def _unstructure_hook(cls: Any) -> Hook:
    hook = _unstructure_hooks.get(cls)
    if hook is None:
        hook = _unstructure_hooks[cls] = _built[0].get_unstructure_hook(cls)
    return hook


def _structure_hook(cls: Any) -> Callable[[Any, Any], Any]:
    hook = _structure_hooks.get(cls)
    if hook is None:
        hook = _structure_hooks[cls] = _built[0].get_structure_hook(cls)
    return hook


def _unstructured(obj: Any) -> Any:
    hook = _unstructure_hooks.get(obj.__class__)
    if hook is None:
        hook = _unstructure_hook(obj.__class__)
    return hook(obj)


# ``_unstructured`` and ``_structure_hook`` once the converter is built (these two until then):
# the per-event path is a list index and a call.
_bound: list[Callable[..., Any]] = [_first_unstructure, _first_structure]


_built: list[JsonConverter] = []


def _converter() -> JsonConverter:
    """Built once, at the first use (this is where cattrs is imported). Under a lock: team
    files are converted in worker threads while the trio thread writes events."""
    if _built:
        return _built[0]
    with _lock:
        if not _built:
            _built.append(_build())
            _bound[:] = [_unstructured, _structure_hook]
    return _built[0]


def _build() -> JsonConverter:
    import enum

    from cattrs.cols import (
        homogenous_tuple_structure_factory,
        is_sequence,
        list_structure_factory,
    )
    from cattrs.gen import mapping_structure_factory
    from cattrs.preconf.json import make_converter

    conv = make_converter()
    for t in (str, int, float, bool):
        conv.register_structure_hook(t, _strict(t))
    # (registered on the enum bases, so a StrEnum is not taken for a plain string)
    for base in (enum.Enum, enum.StrEnum, enum.IntEnum):
        conv.register_structure_hook(base, _enum_structure)
    conv.register_structure_hook_factory(
        lambda t: is_sequence(t) and getattr(t, "__origin__", t) is tuple,
        _container_check(homogenous_tuple_structure_factory, list))
    conv.register_structure_hook_factory(
        lambda t: is_sequence(t) and getattr(t, "__origin__", t) is not tuple,
        _container_check(list_structure_factory, list))
    conv.register_structure_hook_factory(
        lambda t: getattr(t, "__origin__", None) is dict,
        _container_check(mapping_structure_factory, dict))
    # an object of anything (event metadata, a session_start's prompt): checked and copied,
    # values dispatched only when they are not plain
    any_dict = lambda t: getattr(t, "__origin__", None) is dict and t.__args__[1] is Any  # noqa: E731
    conv.register_structure_hook_func(any_dict, _any_dict)
    conv.register_unstructure_hook_func(any_dict, _any_dict_out)
    conv.register_unstructure_hook_factory(attrs.has, _class_unstructure)
    conv.register_structure_hook_factory(attrs.has, _class_structure)
    return conv
