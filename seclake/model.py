"""Typed input: the scalar types every request model is built from, and
``validated``, which reads untrusted data into a pydantic model and turns
pydantic's errors into seclake's (``ValidationFailed`` naming the path).

pydantic does the walking, the types and the paths; what is ours is the
wording. Its own messages ("Input should be a valid integer, unable to parse
string as an integer") name neither the field nor what to send, and the
clients show the message as it comes, so each error type gets a sentence in
the style of every other seclake error: ``options.facets.facets[3].size:
must be at least 1, not 0``.

The scalar types are stricter than pydantic's lax mode where lax would
guess: a boolean is not an integer, ``"true"`` is not a boolean, a number
is not a string. A whole float (``10.0``) and a string of digits (``"10"``)
are still integers: clients built on JavaScript and form fields send them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Annotated, Any, TypeVar, get_args

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Strict, ValidationError
from pydantic_core import PydanticCustomError

from seclake.errors import ValidationFailed
from seclake.record.jsontype import json_kind

M = TypeVar("M", bound=BaseModel)

# Integers a search option or a count may hold (beyond is a typo or an attack).
MAX_WHOLE = 2**62
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class Open(BaseModel):
    """A model that keeps members beyond those named (clients send more than seclake reads)."""

    model_config = ConfigDict(extra="allow")


class Closed(BaseModel):
    """A model that refuses unknown members: a misspelt field (``Status``)
    silently ignored would look like a change that happened."""

    model_config = ConfigDict(extra="forbid")


def _whole(value: Any) -> int:
    if isinstance(value, bool):
        raise PydanticCustomError("whole", "must be an integer, not a boolean")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and len(value) < 20 and value.strip().lstrip("-").isdigit():
        value = int(value)
    if not isinstance(value, int):
        raise PydanticCustomError("whole", "must be an integer, not {value}", {"value": _short(value)})
    if abs(value) > MAX_WHOLE:
        raise PydanticCustomError("whole", "{value} is out of range", {"value": value})
    return value


def _integer(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("integer", "must be an integer, not {kind}", {"kind": json_kind(value)})
    return _whole(value)


def _number(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PydanticCustomError("number", "must be a number, not {value}", {"value": _short(value)})
    if value != value or value in (float("inf"), float("-inf")) or abs(value) > MAX_WHOLE:
        raise PydanticCustomError("number", "{value} is out of range", {"value": value})
    return float(value)


def _plain(value: str) -> str:
    if CONTROL.search(value):
        raise PydanticCustomError("control", "must not contain control characters (NUL, tab, newline...)")
    return value


# An integer, sent as a number, a whole float or a string of digits.
Whole = Annotated[int, BeforeValidator(_whole)]
# An integer sent as a number (a whole float too), never as text.
Integer = Annotated[int, BeforeValidator(_integer)]
# A finite number.
Number = Annotated[float, BeforeValidator(_number)]
# true or false, nothing that looks like one.
Flag = Annotated[bool, Strict()]
# A string, never a number turned into one.
Text = Annotated[str, Strict()]
# A string of one line: no control characters.
Line = Annotated[str, Strict(), AfterValidator(_plain)]


def validated(model: type[M], data: Any, where: str = "") -> M:
    """``data`` read into ``model``; a ``ValidationFailed`` naming ``where``
    and the path inside it when it does not fit."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        raise invalid(e, where, model) from None


def typed(model: type[M], value: M | Mapping[str, Any], where: str = "") -> M:
    """``value`` when it is a ``model`` already, else read into one: services
    take their typed input, or the fields of one (the CLI's, the tests')."""
    return value if isinstance(value, model) else validated(model, value, where)


def invalid(error: ValidationError, where: str, model: type[BaseModel] | None = None) -> ValidationFailed:
    """The first problem of a pydantic error, as seclake says it. An unknown
    field comes first: a misspelt name (``keyfield``) explains the field
    then missing (``keyField``) better than the other way round."""
    errors = error.errors(include_url=False)
    first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
    loc = tuple(first["loc"])
    path = _path(where, loc)
    return ValidationFailed(path or "value", _problem(first, _fields_at(model, loc[:-1])))


def _path(where: str, loc: tuple[Any, ...]) -> str:
    out = where
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part == "[key]":
            continue
        else:
            out += f".{str(part)[:100]}" if out else str(part)[:100]
    return out


def _problem(error: Mapping[str, Any], allowed: list[str]) -> str:
    kind = error["type"]
    value = error.get("input")
    ctx = error.get("ctx") or {}
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "unknown field" + (f"; use {', '.join(allowed)}" if allowed else "")
    if kind == "string_type":
        return f"must be a string, not {json_kind(value)}"
    if kind in ("bool_type", "bool_parsing"):
        return f"must be true or false, not {_short(value)}"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"must be an integer, not {_short(value)}"
    if kind in ("float_type", "float_parsing", "finite_number"):
        return f"must be a number, not {_short(value)}"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"must be an object, not {json_kind(value)}"
    if kind in ("list_type", "tuple_type"):
        return f"must be an array, not {json_kind(value)}"
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '')}, not {_short(value)}"
    if kind in ("greater_than_equal", "greater_than"):
        bound = ctx.get("ge", ctx.get("gt"))
        return f"must be {'at least' if kind == 'greater_than_equal' else 'above'} {bound}, not {_short(value)}"
    if kind in ("less_than_equal", "less_than"):
        bound = ctx.get("le", ctx.get("lt"))
        return f"must be {'at most' if kind == 'less_than_equal' else 'below'} {bound}, not {_short(value)}"
    if kind == "string_too_short":
        return "must not be empty" if ctx.get("min_length") == 1 else f"must be at least {ctx['min_length']} characters long"
    if kind == "string_too_long":
        return f"must be at most {ctx['max_length']} characters long, not {len(value)}"
    if kind == "too_short":
        return f"must hold at least {ctx['min_length']} entries"
    if kind == "too_long":
        return f"must hold at most {ctx['max_length']} entries, not {ctx.get('actual_length', len(value))}"
    # Our own errors (PydanticCustomError) already speak seclake's language.
    return str(error["msg"])[:300]


def _short(value: Any) -> str:
    if isinstance(value, dict | list):
        return json_kind(value)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _fields_at(model: type[BaseModel] | None, loc: tuple[Any, ...]) -> list[str]:
    """The field names of the model found at ``loc`` inside ``model`` (for
    "unknown field; use ..."), or none when it cannot be told."""
    current: Any = model
    for part in loc:
        if not isinstance(part, str):
            continue  # an index into a list: the model is the list's
        current = _model_in(current)
        field = None if current is None else current.model_fields.get(part)
        if field is None:
            return []
        current = field.annotation
    current = _model_in(current)
    if current is None:
        return []
    return [f.alias or name for name, f in current.model_fields.items()]


def _model_in(annotation: Any) -> Any:
    """The model class an annotation holds (``X | None``, ``list[X]`` -> ``X``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None
