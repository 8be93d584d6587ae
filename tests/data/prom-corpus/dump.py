"""Prints what Python's prometheus_client reads from one metrics page, as JSON.

Usage: python dump.py PAGE

A page whose file name ends in `.om.txt` is read with the OpenMetrics parser
(`prometheus_client.openmetrics.parser`), any other with the classic text parser
(`prometheus_client.parser`): the two parsers AIPerf uses. Output, one JSON object:

  {"parser": "classic" | "openmetrics",
   "families": [{"name": ..., "type": ..., "samples": [[name, {labels}, value, timestamp]]}],
   "error": null | {"line": N, "message": "..."}}

`value` is `repr(float(value))` ("1.0", "nan", "inf", "-inf"), `timestamp` is null or the
seconds as `repr(float(timestamp))` (the classic parser divides the page's milliseconds by
1000; the OpenMetrics one keeps seconds, as a float or a (sec, nsec) Timestamp). The strings
keep NaN and the infinities out of JSON's number syntax.

When a parser raises, `families` holds what it yielded before, and `error.line` is the 1-based
line it was reading (the number of lines in the page plus one when it raised after the last).
The line is found by feeding the parser the page through a reader that counts the lines it hands
out: `text_string_to_metric_families(text)` is `text_fd_to_metric_families(StringIO(text))` in
both modules, so this is the same call with a counting StringIO.
"""

import io
import json
import sys

from prometheus_client import openmetrics
from prometheus_client import parser as classic
import prometheus_client.openmetrics.parser  # noqa: F401  (loads openmetrics.parser)


class CountingReader(io.StringIO):
    """A StringIO that remembers how many lines have been read from it."""

    def __init__(self, text):
        super().__init__(text)
        self.lines_read = 0
        self.exhausted = False

    def __next__(self):
        try:
            line = super().__next__()
        except StopIteration:
            self.exhausted = True
            raise
        self.lines_read += 1
        return line


def number(value):
    return repr(float(value))


def main():
    path = sys.argv[1]
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    om = path.endswith(".om.txt")
    module = openmetrics.parser if om else classic
    reader = CountingReader(text)
    families = []
    error = None
    try:
        for family in module.text_fd_to_metric_families(reader):
            samples = []
            for s in family.samples:
                ts = None if s.timestamp is None else number(s.timestamp)
                samples.append([s.name, dict(s.labels), number(s.value), ts])
            families.append({"name": family.name, "type": family.type, "samples": samples})
    except Exception as e:  # noqa: BLE001  (every parser failure is data here)
        line = reader.lines_read + 1 if reader.exhausted else reader.lines_read
        error = {"line": line, "message": f"{type(e).__name__}: {e}"}
    out = {"parser": "openmetrics" if om else "classic", "families": families, "error": error}
    json.dump(out, sys.stdout, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
