"""The config kit every section of the stack config is built with: a strict base model, value types
(Go durations, quantities, strict integers, env blocks), validation that turns pydantic's errors
into problems located by key path, and did-you-mean suggestions for unknown keys."""

from __future__ import annotations

import difflib
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Final, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Strict,
    TypeAdapter,
    ValidationError,
    WithJsonSchema,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from flyte_apps.core.bounds import shown
from flyte_apps.core.durations import (
    MAX_NANOS,
    DurationRangeError,
    DurationSyntaxError,
    format_duration,
    parse_duration,
)
from flyte_apps.core.errors import ConfigProblem
from flyte_apps.core.quantities import is_negative_quantity, is_quantity

MAX_PORT: Final = 65535
MAX_UINT32: Final = 2**32 - 1  # replica bounds and targets are uint32 in Flyte's spec
MAX_INT64: Final = 2**63 - 1  # what Kubernetes' int64 fields (tolerationSeconds) and Go's int hold
MAX_WATCH_BUFFER_SIZE: Final = 100_000
"""Events buffered per watch subscriber in the manager (upstream's default is 100); the manager's Go
config reads it into an int and allocates it per subscriber, so it is bounded like a real size."""
MAX_MANAGER_REPLICAS: Final = 100
"""The manager serves one control plane; more replicas than this is a typo, not a plan."""
ERROR_DURATION: Final = "duration"
ERROR_QUANTITY: Final = "quantity"
ERROR_ENV: Final = "env"
GO_DURATION_HINT: Final = "write it like 90s, 5m or 1h30m"
MAX_DURATION_CHARS: Final = 64
"""The longest Go duration is 24 characters (``2562047h47m16.854775807s``); longer text is not one."""


def value_error(kind: str, detail: str, /) -> PydanticCustomError:
    """A pydantic error whose message is ``detail`` verbatim (our messages are complete sentences)."""
    return PydanticCustomError(kind, "{detail}", {"detail": detail})


def _go_duration(value: object) -> int:
    """Accept a Go duration string and return nanoseconds; a bare number is ambiguous, so refuse it."""
    if isinstance(value, bool) or not isinstance(value, str):
        raise value_error(ERROR_DURATION, f"{shown(value)} is not a Go duration string ({GO_DURATION_HINT})")
    if len(value) > MAX_DURATION_CHARS:
        # Parsing is linear, but a term costs microseconds: a 16 MB "1s1s..." would take seconds.
        raise value_error(
            ERROR_DURATION,
            f"{shown(value)} is longer than {MAX_DURATION_CHARS} characters ({GO_DURATION_HINT})",
        )
    try:
        return parse_duration(value)
    except DurationRangeError:
        longest = format_duration(MAX_NANOS)
        raise value_error(
            ERROR_DURATION, f"{shown(value)} is longer than a Go duration holds ({longest})"
        ) from None
    except DurationSyntaxError:
        raise value_error(
            ERROR_DURATION, f"{shown(value)} is not a Go duration ({GO_DURATION_HINT})"
        ) from None


def _quantity(value: object) -> str:
    """Accept a Kubernetes quantity (``500m``, ``1Gi``); numbers from YAML are taken as their text."""
    text = str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value
    if not isinstance(text, str) or not is_quantity(text):
        raise value_error(ERROR_QUANTITY, f"{shown(value)} is not a Kubernetes quantity")
    if is_negative_quantity(text):
        raise value_error(ERROR_QUANTITY, f"{shown(value)} is negative; resources must be >= 0")
    return text


def _env_source(value: object) -> object:
    """An env block is a map ``NAME: value`` or a list; its entries are checked by ``resolve_env``."""
    if value is None or isinstance(value, dict | list):
        return value
    raise value_error(
        ERROR_ENV, f"must be a map of NAME: value or a list of name/value items, not {shown(value)}"
    )


ENV_VAR_JSON_SCHEMA: Final = {
    "type": "object",
    "title": "EnvVar",
    "description": "An environment variable: the env blocks' ``{name, value}`` form.",
    "properties": {
        "name": {"type": "string", "description": "The variable's name."},
        "value": {"type": "string", "description": "Its value (plain text: never a credential)."},
    },
    "required": ["name", "value"],
}
"""An env block as a JSON schema describes it: the list form (order is part of the spec's bytes, and a
map's order does not survive every language that writes one)."""

# The JSON schemas below describe values as a stack file writes them (the component package's schema is
# made from them): a duration is text (``90s``) however it is stored.
GoDuration = Annotated[int, BeforeValidator(_go_duration), WithJsonSchema({"type": "string"})]
Int = Annotated[int, Strict()]
"""An integer as YAML/JSON writes it: ``true`` or ``"8080"`` are mistakes, not numbers."""
Number = Annotated[float, Strict()]
"""A number as YAML/JSON writes it (an integer or a decimal), never a string or a boolean."""
Bool = Annotated[bool, Strict()]
"""A boolean as YAML/JSON writes it: ``"yes"`` or ``"true"`` in quotes are strings, not booleans."""
LowerCase = Annotated[str, AfterValidator(str.lower)]
"""A DNS name, accepted in any case and lower-cased once, here (DNS names are case-insensitive)."""
Quantity = Annotated[str, BeforeValidator(_quantity)]
RawEnv = Annotated[
    Any, BeforeValidator(_env_source), WithJsonSchema({"type": "array", "items": ENV_VAR_JSON_SCHEMA})
]


class ConfigModel(BaseModel):
    """Config models: camelCase keys as users write them, unknown keys rejected, immutable."""

    model_config = ConfigDict(
        extra="forbid",
        alias_generator=to_camel,
        frozen=True,
        populate_by_name=False,
        # Field docstrings are not read here (pydantic's `use_attribute_docstrings` reads the source
        # of every model at import, in every run of the program): the one place that needs them, the
        # component package's schema, reads them itself (components.schema).
    )


M = TypeVar("M", bound=ConfigModel)


def validate_model(model: type[M], raw: object, path: str, problems: list[ConfigProblem]) -> M | None:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            problems.append(problem_from_error(model, path, error))
        return None


def valid_fields(model: type[ConfigModel], raw: object) -> dict[str, Any]:
    """The fields of ``raw`` (by field name) that are valid on their own, plus the defaults of those it
    leaves out: what the rules can still check when pydantic rejects other fields of the same map."""
    if not isinstance(raw, Mapping):
        return {}
    found: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        alias = info.alias or name
        if alias not in raw:
            if not info.is_required():
                found[name] = info.get_default(call_default_factory=True)
            continue
        annotation: Any = info.annotation
        if info.metadata:
            annotation = Annotated[(annotation, *info.metadata)]  # type: ignore[valid-type]
        try:
            found[name] = TypeAdapter(annotation).validate_python(raw[alias])
        except ValidationError:
            continue
    return found


def problem_from_error(model: type[ConfigModel], path: str, error: Mapping[str, Any]) -> ConfigProblem:
    loc = [part for part in error["loc"] if part != "[key]"]
    where = path + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)
    kind = error["type"]
    if kind == "extra_forbidden":
        allowed = allowed_keys(model, loc[:-1])
        return ConfigProblem(where, unknown_key_message(str(loc[-1]), allowed))
    if kind == "missing":
        return ConfigProblem(where, "is required")
    if kind == "model_type" or kind == "model_attributes_type":
        return ConfigProblem(where, f"must be a map of keys, not {shown(error.get('input'))}")
    message = str(error["msg"])
    if kind in {ERROR_DURATION, ERROR_QUANTITY, ERROR_ENV}:
        return ConfigProblem(where, message)
    return ConfigProblem(where, f"{message[:1].lower()}{message[1:]} (got {shown(error.get('input'))})")


def allowed_keys(model: type[ConfigModel], loc: Sequence[object]) -> tuple[str, ...]:
    """The keys a map at ``loc`` accepts, to suggest the closest one for a misspelled key."""
    current: object = model
    for part in loc:
        if isinstance(part, int):
            continue
        if not (isinstance(current, type) and issubclass(current, ConfigModel)):
            return ()
        fields = {info.alias or name: info for name, info in current.model_fields.items()}
        info = fields.get(str(part))
        if info is None:
            return ()
        current = model_in(info.annotation)
    if isinstance(current, type) and issubclass(current, ConfigModel):
        return tuple(info.alias or name for name, info in current.model_fields.items())
    return ()


def model_in(annotation: object) -> object:
    """The config model inside ``Foo | None`` or ``tuple[Foo, ...]``, if any."""
    if isinstance(annotation, type) and issubclass(annotation, ConfigModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, tuple, list):
        for arg in typing.get_args(annotation):
            found = model_in(arg)
            if found is not None:
                return found
    return None


def unknown_key_message(key: str, allowed: Iterable[str]) -> str:
    choices = list(allowed)
    # difflib is quadratic in the key's length: a key far longer than any valid one matches none.
    longest = max((len(choice) for choice in choices), default=0)
    close = difflib.get_close_matches(key, choices, n=1, cutoff=0.6) if len(key) <= 2 * longest else []
    if close:
        return f"unknown key {shown(key)}; did you mean '{close[0]}'?"
    if choices:
        return f"unknown key {shown(key)}; valid keys: {', '.join(choices)}"
    return f"unknown key {shown(key)}"
