#!/usr/bin/env python3
"""Writes configs.json: the configuration of the bare line (`base`) and, for each line of samples.json (a `profile` flag with a value of its kind,
chosen by ringperf's `invocation::tests`), the configuration AIPerf 0.13's own converter makes of
`aiperf profile --model m --url http://127.0.0.1:9 <line>`, or AIPerf's refusal of it.

Run with AIPerf 0.13 installed (`pip install aiperf==0.13.0` in a scratch venv):
    python gen.py            # from this directory
Nothing is sent anywhere: only the command-line parser and the converter run.
"""

import json
import os
import sys

from aiperf.cli_commands.profile import app
from aiperf.config.flags.converter import convert_cli_to_aiperf

BASE = ["--model", "m", "--url", "http://127.0.0.1:9"]


def convert(line):
    try:
        parsed = app.parse_args(BASE + line, print_error=False, exit_on_error=False)
        cli = parsed[1].arguments["cli_config"]
        config = convert_cli_to_aiperf(cli)
    except BaseException as e:  # cyclopts and pydantic raise their own kinds, SystemExit too
        return {"argv": line, "error": f"{type(e).__name__}: {e}"[:300]}
    return {"argv": line, "config": config.model_dump(mode="json", exclude_unset=True)}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "samples.json")) as f:
        samples = json.load(f)
    out = [convert(line) for line in samples]
    with open(os.path.join(here, "configs.json"), "w") as f:
        json.dump({"base": convert([])["config"], "flags": out}, f, indent=1, sort_keys=True)
        f.write("\n")
    refused = sum(1 for e in out if "error" in e)
    print(f"{len(out)} lines, {len(out) - refused} converted, {refused} refused by AIPerf", file=sys.stderr)


if __name__ == "__main__":
    main()
