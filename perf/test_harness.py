#!/usr/bin/env python3
"""Unit checks of the harness's own logic (no client is run): `python3 perf/test_harness.py`."""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402  (perf/harness.py)


def summary(threads):
    return {"ringperf": {"threads": threads}}


class RingperfThreads(unittest.TestCase):
    def setUp(self):
        harness.REFUSED.clear()

    def test_every_thread_by_name(self):
        th = harness.ringperf_threads(summary([
            {"name": "main", "cpu_ns": 50},
            {"name": "aggregator", "cpu_ns": 20},
            {"name": "worker_0", "cpu_ns": 7, "busy_fraction": 0.1},
            {"name": "worker_1", "cpu_ns": 3, "busy_fraction": 0.05},
        ]))
        self.assertEqual(th["aggregator"], 20)
        self.assertEqual(harness.worker_ns(th), 10)
        self.assertEqual(harness.REFUSED, [])

    def test_missing_or_zero_figures_are_refused(self):
        for bad in [
            {},
            summary([]),
            summary([{"name": "aggregator", "cpu_ns": 0}, {"name": "worker_0", "cpu_ns": 3}]),
            summary([{"name": "main", "cpu_ns": 5}, {"name": "aggregator", "cpu_ns": 2}]),
            summary([{"name": "aggregator", "cpu_ns": 2}, {"name": "worker_0", "cpu_ns": None}]),
        ]:
            with self.assertRaises(harness.CpuFigureRefused):
                harness.ringperf_threads(bad)
        self.assertEqual(len(harness.REFUSED), 5, "each refusal makes the harness exit non-zero")


if __name__ == "__main__":
    unittest.main()
