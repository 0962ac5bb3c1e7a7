"""PostgreSQL's geometric types as Debezium passes them on with `include.unknown.datatypes=true`.

Debezium reads box, circle, line, lseg, path and polygon through pgjdbc's PGbox, PGcircle, ... and
emits their `getValue()` text, which writes every coordinate with Java's `Double.toString`:
`<(10,20),10>` becomes `<(10.0,20.0),10.0>`. The server's text (extra_float_digits=3: the shortest
form that reads back exactly) has the same punctuation, so only the numbers are rewritten.
"""

from __future__ import annotations

import decimal
import math
import re

GEOMETRIC = frozenset({"box", "circle", "line", "lseg", "path", "polygon"})
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?Infinity|NaN")


def java_double(x: float) -> str:
    """Java's Double.toString: shortest digits, plain from 1e-3 to 1e7, else `d.dddE±n`."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        text = repr(x)  # plain in this range, shortest digits
        return text if "." in text else text + ".0"
    sign, digits, exponent = decimal.Decimal(repr(x)).as_tuple()
    assert isinstance(exponent, int)
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    power = exponent + len(digits) - 1  # of the first digit
    mantissa = ds[0] + "." + (ds[1:] or "0")
    return ("-" if sign else "") + f"{mantissa}E{power}"


def pgjdbc_text(text: str) -> str:
    """The server's text of a geometric value, with each number written as pgjdbc writes it."""
    return _NUMBER.sub(lambda m: java_double(float(m.group(0))), text)
