#!/usr/bin/env python3
"""A minimal OTLP/HTTP metrics receiver for ringperf's tests (tests/it/otel.rs).

Decodes each POST /v1/metrics body as an ExportMetricsServiceRequest with the official
generated classes of the `opentelemetry-proto` package, and appends it as one JSON line
(protobuf's canonical JSON mapping) to the file given. Listens on 127.0.0.1; the chosen port
is printed on the first line of stdout. `--fail N` answers the first N exports with HTTP 500.
"""

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer

from google.protobuf.json_format import MessageToDict
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--fail", type=int, default=0)
    args = ap.parse_args()
    state = {"failed": 0}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.path != "/v1/metrics":
                self.send_response(404)
                self.end_headers()
                return
            if state["failed"] < args.fail:
                state["failed"] += 1
                self.send_response(500)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            req = ExportMetricsServiceRequest()
            req.ParseFromString(body)
            line = {
                "content_type": self.headers.get("Content-Type"),
                "request": MessageToDict(req),
            }
            with open(args.out, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")
            answer = ExportMetricsServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *a) -> None:
            pass

    srv = HTTPServer(("127.0.0.1", 0), Handler)
    print(srv.server_address[1], flush=True)
    sys.stdout.close()
    srv.serve_forever()


if __name__ == "__main__":
    main()
