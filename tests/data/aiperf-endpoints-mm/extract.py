#!/usr/bin/env python3
"""Key sets of AIPerf 0.13 runs of the multimodal endpoint types, for tests/it/endpoints_mm.rs.

    extract.py NAME=DIR [NAME=DIR ...]

For each artifact directory DIR that `aiperf profile` wrote, writes NAME.json holding:
`argv` (AIPerf's own `run_info.cli_command`, split as a shell splits it), `json_metrics` (the
top-level keys of profile_export_aiperf.json whose value is an object with a `unit`, each with
that unit, in file order; AIPerf's own order of the `http_req_*` keys varies from run to run), `csv_rows` (the first cell of every non-empty row of profile_export_aiperf.csv, in file
order) and `payload` (the first request body of inputs.json). Standard library only.
"""

import csv
import json
import pathlib
import shlex
import sys

HERE = pathlib.Path(__file__).resolve().parent


def extract(directory: pathlib.Path) -> dict:
    summary = json.loads((directory / "profile_export_aiperf.json").read_text())
    metrics = [
        [key, value["unit"]]
        for key, value in summary.items()
        if isinstance(value, dict) and "unit" in value
    ]
    with open(directory / "profile_export_aiperf.csv", newline="") as f:
        rows = [row[0] for row in csv.reader(f) if row and row[0]]
    inputs = json.loads((directory / "inputs.json").read_text())
    payload = inputs["data"][0]["payloads"][0]
    return {
        "argv": shlex.split(summary["run_info"]["cli_command"]),
        "json_metrics": metrics,
        "csv_rows": rows,
        "payload": payload,
    }


def main() -> None:
    for arg in sys.argv[1:]:
        name, _, directory = arg.partition("=")
        out = HERE / f"{name}.json"
        out.write_text(json.dumps(extract(pathlib.Path(directory)), indent=1) + "\n")
        print(out)


if __name__ == "__main__":
    main()
