"""One shape for every Kafka configuration key we accept, broker-level or topic-level.

Values arrive as strings (server.properties, ``--override``, AlterConfigs) and are parsed by
type the way Kafka's ``ConfigDef`` parses them; a bad value raises ``ConfigValueError`` naming
the key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1
SHORT_MIN, SHORT_MAX = -(2**15), 2**15 - 1


class ConfigValueError(ValueError):
    """A configuration value that does not parse or fails its check."""

    def __init__(self, name: str, value: Any, reason: str):
        super().__init__(f"Invalid value {value} for configuration {name}: {reason}")
        self.name = name
        self.value = value
        self.reason = reason


@dataclass(frozen=True)
class ConfigDef:
    """A Kafka configuration key.

    ``type`` is one of Kafka's: int, long, short, double, boolean, string, list, class, password.
    ``validator`` receives the parsed value and raises ``ValueError`` with a reason.
    ``broker_synonym`` (topic-level keys only) names the broker key that supplies the default,
    e.g. ``segment.bytes`` ← ``log.segment.bytes``; DescribeConfigs reports it as a synonym.
    ``read_only`` broker keys cannot be changed with AlterConfigs without a restart.
    ``per_broker`` dynamic broker keys can be changed for one broker only, not as the cluster
    default (Kafka's "per-broker" update mode). ``internal`` keys are Kafka's ``defineInternal``
    ones: accepted, but DescribeConfigs lists them only where they are set (a topic's override,
    the broker's file).
    """

    name: str
    type: str
    default: Any
    doc: str = ""
    validator: Callable[[Any], None] | None = None
    broker_synonym: str | None = None
    read_only: bool = True
    sensitive: bool = False
    per_broker: bool = False
    internal: bool = False

    def parse(self, raw: Any) -> Any:
        """Parse a raw (usually string) value to this key's type and validate it."""
        value = parse_typed(self.name, self.type, raw)
        if self.validator is not None and value is not None:
            try:
                self.validator(value)
            except ValueError as exc:
                # Kafka's ConfigException prints a password's value as [hidden].
                shown = "[hidden]" if self.sensitive or self.type == "password" else raw
                raise ConfigValueError(self.name, shown, str(exc)) from None
        return value

    def render(self, value: Any) -> str | None:
        """A value as Kafka prints it in DescribeConfigs."""
        return render_typed(self.type, value)


def parse_typed(name: str, type_: str, raw: Any) -> Any:
    if raw is None:
        return None
    if type_ in ("int", "long", "short"):
        not_a_number = f"Not a number of type {type_.upper()}"  # Kafka's ConfigDef message
        if isinstance(raw, bool):
            raise ConfigValueError(name, raw, not_a_number)
        if isinstance(raw, int):
            value = raw
        else:
            text = str(raw).strip()
            try:
                value = int(text)
            except ValueError:
                raise ConfigValueError(name, raw, not_a_number) from None
        lo, hi = {
            "int": (INT_MIN, INT_MAX),
            "long": (LONG_MIN, LONG_MAX),
            "short": (SHORT_MIN, SHORT_MAX),
        }[type_]
        if not lo <= value <= hi:
            raise ConfigValueError(name, raw, not_a_number)
        return value
    if type_ == "double":
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise ConfigValueError(name, raw, "Not a number of type DOUBLE") from None
    if type_ == "boolean":
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("true", "false"):
            return text == "true"
        raise ConfigValueError(name, raw, "Expected value to be either true or false")
    if type_ == "list":
        if isinstance(raw, (list, tuple)):
            return [str(item) for item in raw]
        text = str(raw).strip()
        return [item.strip() for item in text.split(",") if item.strip()] if text else []
    if type_ in ("string", "class", "password"):
        return str(raw).strip() if type_ != "password" else str(raw)
    raise ValueError(f"unknown config type {type_!r} for {name}")


def render_typed(type_: str, value: Any) -> str | None:
    if value is None:
        return None
    if type_ == "boolean":
        return "true" if value else "false"
    if type_ == "list":
        return ",".join(value)
    if type_ == "double":
        return java_double(value)
    return str(value)


def java_double(value: float) -> str:
    """A double as Java's ``Double.toString`` prints it (Kafka renders defaults that way):
    ``0.9``, ``100.0``, ``1.0E7``, ``1.7976931348623157E308``."""
    value = float(value)
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)
    sign, digits, exponent = Decimal(repr(value)).as_tuple()  # the shortest digits, as Java
    text = "".join(map(str, digits)).rstrip("0") or "0"
    mantissa = ("-" if sign else "") + text[0] + "." + (text[1:] or "0")
    exponent += len(digits) - 1
    return f"{mantissa}E{int(exponent)}"


def at_least(minimum: float) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        if value < minimum:
            raise ValueError(f"Value must be at least {minimum}")

    return check


def between(minimum: float, maximum: float) -> Callable[[Any], None]:
    def check(value: Any) -> None:
        if not minimum <= value <= maximum:
            raise ValueError(f"Value must be between {minimum} and {maximum}")

    return check


def one_of(*choices: str, ignore_case: bool = False) -> Callable[[Any], None]:
    allowed = {c.upper() for c in choices} if ignore_case else set(choices)

    def check(value: Any) -> None:
        values = value if isinstance(value, list) else [value]
        for item in values:
            if (item.upper() if ignore_case else item) not in allowed:
                qualifier = " (case insensitive)" if ignore_case else ""
                raise ValueError(f"String must be one of{qualifier}: {', '.join(choices)}")

    return check


def non_empty(value: Any) -> None:
    """Kafka's NonEmptyString and non-empty ValidList."""
    if not value:
        raise ValueError(
            "String may not be empty" if isinstance(value, str) else "Empty list not allowed"
        )
