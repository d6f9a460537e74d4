"""``ssl.principal.mapping.rules``: how a client certificate's subject DN becomes the user name
of its principal, with the syntax and semantics of Kafka's ``SslPrincipalMapper``.

The value is a comma-separated list of rules, tried in order; the first that applies wins:

- ``DEFAULT``: the DN itself (RFC 2253, ``CN=alice,OU=eng,O=Example``);
- ``RULE:pattern/replacement/`` with an optional ``L`` or ``U`` after the last slash: if the
  whole DN matches ``pattern`` (a regular expression), every match is replaced by
  ``replacement`` (``$1`` refers to a group), then lower- or upper-cased.

``RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/L,DEFAULT`` maps ``CN=Kafka,OU=ServiceUsers,O=X`` to
``kafka`` and leaves other DNs alone. When no rule applies the connection is refused, as
Kafka's ``NoMatchingRule`` fails the authentication. The rules are parsed when the broker
starts, so a malformed one is a configuration error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Kafka's RULE_PATTERN and RULE_SPLITTER, unchanged.
_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_PARSER = re.compile(_RULE)
_BACK_REFERENCE = re.compile(r"\$(\d+)")


class NoMatchingRule(ValueError):
    """No rule of ``ssl.principal.mapping.rules`` applies to a DN."""


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern | None  # None: DEFAULT
    replacement: str = ""
    lower: bool = False
    upper: bool = False

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        result = self.pattern.sub(self._expand, dn)
        if self.lower:
            return result.lower()
        if self.upper:
            return result.upper()
        return result

    def _expand(self, match: re.Match) -> str:
        """The replacement for one match, read as Java's ``Matcher.replaceAll`` reads it:
        ``$n`` is group n, a backslash takes the next character literally; a ``$n`` past the
        last group stays text (Kafka escapes those)."""
        out, text, i = [], self.replacement, 0
        while i < len(text):
            reference = _BACK_REFERENCE.match(text, i)
            if text[i] == "\\" and i + 1 < len(text):
                out.append(text[i + 1])
                i += 2
            elif reference and int(reference[1]) <= (self.pattern.groups if self.pattern else 0):
                out.append(match[int(reference[1])] or "")
                i = reference.end()
            else:
                out.append(text[i])
                i += 1
        return "".join(out)


def parse_rules(text: str) -> list[Rule]:
    """Kafka's ``SslPrincipalMapper.fromRules``: ValueError for a malformed rule."""
    rules = []
    for match in _SPLITTER.finditer(text.strip()):
        rule = match[1]
        parsed = _PARSER.match(rule)
        if parsed is None or parsed.end() != len(rule):
            raise ValueError(f"Invalid rule: `{rule}`")
        if parsed[1] is not None:
            rules.append(Rule(None))
        elif parsed[2] is not None:
            try:
                pattern = re.compile(parsed[2])
            except re.error as exc:
                raise ValueError(f"Invalid rule: `{rule}`: {exc}") from None
            rules.append(Rule(pattern, parsed[4], parsed[6] == "L", parsed[6] == "U"))
    return rules


class SslPrincipalMapper:
    def __init__(self, text: str = "DEFAULT"):
        self.text = text
        self.rules = parse_rules(text)

    def name(self, dn: str) -> str:
        """The user name of the certificate with subject ``dn``."""
        for rule in self.rules:
            name = rule.apply(dn)
            if name is not None:
                return name
        raise NoMatchingRule(f"No rules apply to {dn}, rules {self.text}")
