#!/usr/bin/env python3
"""Ground truth for ringperf's config-file Jinja2 (src/config/yaml/jinja.rs): each case is a
template and its context, rendered by Jinja2 itself with AIPerf 0.13's environment
(`StrictUndefined`, no autoescape, `keep_trailing_newline=True`). Writes cases.json beside this
file: [{"template", "context", "rendered"}] or, where Jinja2 raises, "error" (the exception's
class name) instead of "rendered".

    /work/aiperf-venv/bin/python tests/data/jinja2/make_cases.py
"""

import json
import pathlib

import jinja2

ENV = jinja2.Environment(
    undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True
)

CTX = {
    "n": 7,
    "f": 2.5,
    "name": "dense-agg",
    "flag": True,
    "nothing": None,
    "cs": [1, 2, 4, 8],
    "words": ["a", "b", "c"],
    "empty": [],
    "m": {"b": 2, "a": 1, "nested": {"k": "v"}},
    "phases": {"profiling": {"name": "profiling", "rate": 10.5, "concurrency": 4}},
    "text": "  padded\t",
    "uni": "caf\u00e9 <b> & 'q'",
}

TEMPLATES = [
    # comparisons and logic
    "{{ n == 7 }} {{ n != 7 }} {{ n < 8 }} {{ n <= 7 }} {{ n > 7 }} {{ n >= 8 }}",
    "{{ 1 < n < 10 }} {{ 1 < n > 10 }} {{ n == 7.0 }} {{ flag == 1 }} {{ '7' == n }}",
    "{{ 'a' < 'b' }} {{ 'B' < 'a' }} {{ nothing == none }} {{ cs == [1, 2, 4, 8] }}",
    "{{ n > 5 and f < 3 }} {{ n > 5 and 'yes' }} {{ 0 or 'fallback' }} {{ '' or 0 }}",
    "{{ not flag }} {{ not empty }} {{ not (n > 5 and f > 3) }}",
    "{{ 'big' if n > 5 else 'small' }} {{ 'x' if nothing else 'y' }}",
    "{{ 2 in cs }} {{ 3 in cs }} {{ 3 not in cs }} {{ 'ens' in name }} {{ 'a' in m }} {{ 'z' in m }}",
    "{{ n < 'a' }}",
    "{{ missing == 1 }}",
    "{{ 'x' if missing else 'y' }}",
    "{{ 'x' if n < 5 }}",
    # attributes, items, lists
    "{{ phases.profiling.rate }} {{ phases.profiling.concurrency * 2 }}",
    "{{ m.a }} {{ m['b'] }} {{ m.nested.k }} {{ cs[0] }} {{ cs[-1] }} {{ words.1 }}",
    "{{ name[0] }}{{ name[-1] }}",
    "{{ m.nope }}",
    "{{ cs[10] }}",
    "{{ [1, 2, n] }} {{ ['a', 'b'] }} {{ cs }} {{ m }} {{ [] }} {{ [1.5, none, true] }}",
    "{{ [n, f][1] }}",
    # tests
    "{{ n is defined }} {{ missing is defined }} {{ missing is not defined }} {{ nothing is none }}",
    "{{ n is number }} {{ name is string }} {{ m is mapping }} {{ cs is sequence }} {{ n is even }} {{ n is odd }}",
    "{{ flag is boolean }} {{ flag is true }} {{ n is integer }} {{ f is float }} {{ n is not string }}",
    # filters
    "{{ m | tojson }} {{ cs | tojson }} {{ name | tojson }} {{ f | tojson }} {{ nothing | tojson }}",
    "{{ 1 if false else 2 }} {{ (n if flag else f) + 1 }}",
    "{{ uni | tojson }}",
    "{{ [1e16, 0.1, 3.0] | tojson }} {{ flag | tojson }}",
    "{{ name | replace('-', '_') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ 'abc' | replace('', '-') }}",
    "{{ cs | length }} {{ name | length }} {{ m | count }} {{ words | join(',') }} {{ cs | join }}",
    "[{{ text | trim }}] [{{ 'xxhixx' | trim('x') }}]",
    "{{ cs | first }} {{ cs | last }} {{ name | first }} {{ -3 | abs }} {{ (-2.5) | abs }}",
    "{{ empty | first }}",
    "{{ n | length }}",
    # blocks
    "{% if n > 5 %}big{% elif n > 2 %}mid{% else %}small{% endif %}",
    "{% if n > 50 %}big{% elif n > 2 %}mid{% else %}small{% endif %}",
    "{% if nothing %}x{% endif %}.",
    "{% for c in cs %}{{ c }}{% if not loop.last %},{% endif %}{% endfor %}",
    "{% for c in cs %}{{ loop.index }}:{{ loop.index0 }}:{{ loop.first }}:{{ loop.length }} {% endfor %}",
    "{% for w in empty %}{{ w }}{% else %}none{% endfor %}",
    "{% for k in m %}{{ k }};{% endfor %}",
    "{% for ch in 'ab' %}<{{ ch }}>{% endfor %}",
    "{% set x = n * 2 %}{{ x }} {% set y = x + 1 %}{{ y }}",
    "{% for c in cs %}{% set t = c %}{% endfor %}{{ t is defined }}",
    "{% set x = 1 %}{% for c in cs %}{% set x = c %}{% endfor %}{{ x }}",
    "{% if missing %}x{% endif %}",
    "{% for c in n %}x{% endfor %}",
    # whitespace control
    "a  {{- n }}  b",
    "a  {{ n -}}  \n b",
    "{% for c in cs -%}\n  {{ c }}\n{%- endfor %}",
    "x {#- a comment -#} y",
    "{%- if flag %}  yes  {% endif -%}  !",
    "line\n{% if flag %}\nyes\n{% endif %}\nend\n",
    "{{ n }}\n",
]


def main() -> None:
    cases = []
    for t in TEMPLATES:
        case = {"template": t, "context": CTX}
        try:
            case["rendered"] = ENV.from_string(t).render(CTX)
        except Exception as e:  # noqa: BLE001 - the class is the expected outcome
            case["error"] = type(e).__name__
        cases.append(case)
    out = pathlib.Path(__file__).with_name("cases.json")
    out.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(cases)} cases, jinja2 {jinja2.__version__}")


if __name__ == "__main__":
    main()
