#!/usr/bin/env python3
"""Unit checks of the harness's own logic (no client is run): `python3 perf/test_harness.py`."""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import event_floor  # noqa: E402  (perf/event_floor.py)
import harness  # noqa: E402  (perf/harness.py)
import overhead  # noqa: E402  (perf/overhead.py)
import report  # noqa: E402  (perf/report.py)


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


def lag_json(lag):
    return {"ringperf": {"receive_lag_ns": lag}}


class ReceiveLag(unittest.TestCase):
    def setUp(self):
        harness.REFUSED.clear()

    def test_ns_figures_become_us(self):
        got = harness.receive_lag_us(lag_json({"p50": 29083.0, "p99": 61000.5, "max": 1.5e6,
                                               "count": 1000}))
        self.assertEqual(got, {"p50_us": 29.083, "p99_us": 61.0005, "max_us": 1500.0,
                               "count": 1000})
        self.assertEqual(harness.REFUSED, [])

    def test_missing_or_zero_figures_are_refused(self):
        for bad in [
            {},
            lag_json(None),  # --timestamps user, or the kernel stamped no read
            lag_json({"p50": 5.0, "p99": 6.0, "max": 7.0, "count": 0}),
            lag_json({"p50": 5.0, "p99": 6.0, "max": 7.0}),
            lag_json({"p50": 0.0, "p99": 6.0, "max": 7.0, "count": 10}),
            lag_json({"p50": 5.0, "p99": None, "max": 7.0, "count": 10}),
            lag_json({"p50": 5.0, "p99": 6.0, "max": -1.0, "count": 10}),
        ]:
            with self.assertRaises(harness.LagFigureRefused):
                harness.receive_lag_us(bad)
        self.assertEqual(len(harness.REFUSED), 7, "each refusal makes the harness exit non-zero")


def overhead_row(c, stamps, ttft_p50, event_p50, first_p50=10.0):
    def s(p50):
        return {"p50_us": p50, "p99_us": 2 * p50, "max_us": 3 * p50, "count": 10}
    return {"concurrency": c, "timestamps": stamps, "ttft_overhead": s(ttft_p50),
            "event_recv_lag": s(event_p50), "first_token_recv_lag": s(first_p50),
            "send_side": s(1.0), "itl_overhead": s(1.0), "mock_ttft_ms": 2, "mock_itl_ms": 2,
            "tokens": 10, "mock_busy": 0.1, "note": ""}


class StampPairs(unittest.TestCase):
    def test_user_over_kernel_of_the_medians_per_concurrency(self):
        rows = [overhead_row(1, "kernel", 50.0, 4.0), overhead_row(1, "user", 75.0, 32.0),
                overhead_row(256, "kernel", 600.0, 100.0), overhead_row(256, "user", 1800.0, 600.0),
                overhead_row(1000, "kernel", 9000.0, 2000.0)]
        pairs = report.stamp_pairs(rows)
        self.assertEqual([p["concurrency"] for p in pairs], [1, 256], "c=1000 has no user run")
        self.assertEqual(pairs[0]["ratios"], {"ttft_overhead": 1.5, "event_recv_lag": 8.0,
                                              "first_token_recv_lag": 1.0})
        self.assertEqual(pairs[1]["ratios"]["ttft_overhead"], 3.0)
        self.assertEqual(pairs[1]["ratios"]["event_recv_lag"], 6.0)

    def test_failed_runs_and_non_figures_give_no_ratio(self):
        rows = [overhead_row(1, "kernel", 50.0, 0.0),  # a zero median: no ratio
                overhead_row(1, "user", 75.0, 32.0),
                overhead_row(256, "kernel", 600.0, 100.0),
                {"concurrency": 256, "timestamps": "user", "failed": "exit 1"}]
        pairs = report.stamp_pairs(rows)
        self.assertEqual(len(pairs), 1, "a failed user run pairs with nothing")
        self.assertIsNone(pairs[0]["ratios"]["event_recv_lag"])
        self.assertEqual(pairs[0]["ratios"]["ttft_overhead"], 1.5)
        table = report.overhead(rows)
        self.assertIn("| 1 | per-event receive error | 0.0 / 0.0 | 32.0 / 64.0 | n/a |", table)
        self.assertIn("| 256 | user | FAILED: exit 1 |", table)


class MemoryPerStream(unittest.TestCase):
    def test_rss_growth_over_the_overlap(self):
        # (1 MiB grown) / 512 in flight = 2 KiB each
        got = harness.bytes_per_in_flight({"maxrss_kib": 57_000},
                                          {"maxrss_kib": 58_024, "max_in_flight": 512})
        self.assertEqual(got, 2048.0)

    def test_missing_or_zero_figures_are_refused(self):
        good_b, good_m = {"maxrss_kib": 100}, {"maxrss_kib": 200, "max_in_flight": 10}
        for b, m in [
            ({"failed": "exit 1"}, good_m),
            (good_b, {"failed": "timed out"}),
            ({"maxrss_kib": 0}, good_m),
            (good_b, {"maxrss_kib": 0, "max_in_flight": 10}),
            (good_b, {"maxrss_kib": 200, "max_in_flight": 1}),
            (good_b, {"maxrss_kib": 200}),
            ({"maxrss_kib": 300}, good_m),  # no growth
        ]:
            with self.assertRaises(harness.CheckFailed):
                harness.bytes_per_in_flight(b, m)

    def test_report_shows_both_shapes(self):
        res = {"short": {"tokens": 10, "mock_itl_ms": 10,
                         "baseline": {"concurrency": 1, "max_in_flight": 1, "maxrss_kib": 1024,
                                      "cpu_s": 0.2},
                         "many": {"concurrency": 2000, "max_in_flight": 1000, "maxrss_kib": 11264,
                                  "cpu_s": 1.0},
                         "bytes_per_request": 10240.0},
               "long": {"tokens": 1000, "mock_itl_ms": 0, "baseline": {"failed": "exit 2"},
                        "many": {"failed": "exit 2"}, "failed": "baseline run failed: exit 2"}}
        text = report.manyconn(res)
        self.assertIn("**10.0 KiB** (10 tokens, ITL 10 ms)", text)
        self.assertIn("FAILED: baseline run failed: exit 2 (1,000 tokens, ITL 0 ms)", text)


class Placement(unittest.TestCase):
    def cell(self, cpu, p50=None, p99=None):
        c = {"cpu_s_per_1k": cpu}
        if p50 is not None:
            c["ttft_overhead"] = {"p50_us": p50, "p99_us": p99}
        return c

    def test_ratios_are_cores_minus_one_over_default(self):
        r = harness.placement_ratios(self.cell(0.5, 100.0, 400.0), self.cell(0.4, 50.0, 800.0))
        self.assertEqual(r, {"cpu": 0.8, "ttft_overhead_p50": 0.5, "ttft_overhead_p99": 2.0})

    def test_no_ratio_from_failed_or_missing_figures(self):
        r = harness.placement_ratios({"failed": "exit 1"}, self.cell(0.4, 50.0, 80.0))
        self.assertEqual(r, {"cpu": None, "ttft_overhead_p50": None, "ttft_overhead_p99": None})
        r = harness.placement_ratios(self.cell(0.5), self.cell(0.0))  # non-streaming, zero CPU
        self.assertEqual(r, {"cpu": None, "ttft_overhead_p50": None, "ttft_overhead_p99": None})
        r = harness.placement_ratios(self.cell(0.5), self.cell(float("nan")))
        self.assertIsNone(r["cpu"])


class OverheadAgainstTheTruth(unittest.TestCase):
    """One record against a hand-made truth entry (all ns): the client started at mono 1 000, saw
    its first token 50 µs later (TTFT 0.05 ms) and the second 1 ms after it; the request reached
    the mock's socket at 6 000 and its thread at 40 000; the mock wrote the tokens at 41 000 and
    1 041 000."""

    def run_compute(self, kernel_arrival):
        import json
        import tempfile
        wall0, mono0 = 10_000_000, 0
        rec = {"metadata": {"x_request_id": "a", "request_start_ns": wall0 + 1_000,
                            "benchmark_phase": "profiling"},
               "metrics": {"time_to_first_token": {"value": 0.05},
                           "inter_chunk_latency": {"value": [1.0]}}}
        truth = [{"request_id": "a", "arrival_ns": 40_000, "event_ns": [41_000, 1_041_000],
                  "end_ns": 1_041_000, "content_tokens": 2}]
        if kernel_arrival:
            truth[0]["arrival_kernel_ns"] = 6_000
        export = {"ringperf": {"clock": {"monotonic_origin_ns": mono0, "wall_origin_ns": wall0}}}
        with tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False) as fh:
            fh.write(json.dumps(rec) + "\n")
        return overhead.compute(export, fh.name, truth)

    def test_kernel_arrival_takes_the_mock_wakeup_out(self):
        o = self.run_compute(True)
        self.assertEqual(o["arrival"], "kernel")
        # client TTFT 50 µs - (41 µs - 6 µs) = 15 µs; send side 6 µs - 1 µs = 5 µs.
        self.assertAlmostEqual(o["ttft_overhead"]["p50_us"], 15.0)
        self.assertAlmostEqual(o["send_side"]["p50_us"], 5.0)
        self.assertAlmostEqual(o["mock_wakeup"]["p50_us"], 34.0)
        # Against the mock's read: 50 - (41 - 40) = 49 µs.
        self.assertAlmostEqual(o["ttft_overhead_vs_mock_read"]["p50_us"], 49.0)
        # First token at 51 µs vs the write at 41 µs; the second at 1 051 µs vs 1 041 µs.
        self.assertAlmostEqual(o["event_recv_lag"]["p50_us"], 10.0)

    def test_an_old_truth_log_measures_to_the_mock_read(self):
        o = self.run_compute(False)
        self.assertEqual(o["arrival"], "user")
        self.assertAlmostEqual(o["ttft_overhead"]["p50_us"], 49.0)
        self.assertEqual(o["mock_wakeup"]["count"], 0)


class EventFloor(unittest.TestCase):
    """perf/event_floor.py: the loads' plans, recv_floor's output, the truth log's shape, the
    ratio and its refusals."""

    def setUp(self):
        harness.REFUSED.clear()

    def test_plans_give_both_sides_the_same_events_and_rate(self):
        p = event_floor.plan("paced", 32, 1, 100, 2)
        self.assertEqual((p["rate"], p["requests"], p["events"]), (32000.0, 640, 64000))
        self.assertEqual(p["mock"], {"ttft_ms": 1, "itl_ms": 1, "tokens": 100})
        self.assertEqual(p["floor_args"][:2] + p["floor_args"][3:], ["32", "32000", "1"])
        b = event_floor.plan("burst", 32, 5, 64, 2)
        self.assertEqual((b["rate"], b["requests"], b["events"]), (409600.0, 12800, 819200))
        self.assertEqual(b["mock"], {"ttft_ms": 5, "itl_ms": 0, "tokens": 64})
        self.assertEqual(b["floor_args"][3], "64", "64 events a write")
        # recv_floor's count, (long long)(RATE * SECONDS) in whole writes, is the events asked
        for q in (p, b, event_floor.plan("paced", 7, 3, 10, 1.3)):
            rate, secs, burst = float(q["floor_args"][1]), float(q["floor_args"][2]), \
                int(q["floor_args"][3])
            self.assertEqual(int(rate * secs) // burst * burst, q["events"])
        for bad in [("burst", 32, 5, 65, 2), ("paced", 0, 1, 10, 2), ("paced", 1, 0, 10, 2),
                    ("other", 1, 1, 1, 1)]:
            with self.assertRaises(ValueError):
                event_floor.plan(*bad)

    def test_floor_output_is_parsed_and_refused_when_short(self):
        line = ('{"mode": "uring", "streams": 32, "burst": 1, "events": 64000, "rate_asked": '
                '32000, "rate_reached": 31990, "receiver_ns_per_event": 3957.7, '
                '"events_per_wakeup": 1.01}')
        f = event_floor.parse_floor("noise\n" + line + "\n", 64000)
        self.assertEqual((f["ns_per_event"], f["events"], f["rate"]), (3957.7, 64000, 31990.0))
        for out, want in [("", 64000), ("{not json", 64000), (line, 64001),
                          (line.replace("3957.7", "0.0"), 64000),
                          (line.replace('"receiver_ns_per_event": 3957.7, ', ""), 64000),
                          (line.replace("3957.7", "NaN"), 64000)]:
            with self.assertRaises(event_floor.Refused):
                event_floor.parse_floor(out, want)

    def truth(self, n, stamps):
        return [{"completed": True, "content_tokens": len(stamps), "event_ns": list(stamps)}
                for _ in range(n)]

    def test_the_truth_log_must_have_the_loads_shape(self):
        p = event_floor.plan("paced", 2, 1, 3, 0.003)  # 2 requests of 3 events
        self.assertEqual(event_floor.truth_events(self.truth(2, [1, 2, 3]), p), 6)
        b = event_floor.plan("burst", 2, 5, 3, 0.005)
        self.assertEqual(event_floor.truth_events(self.truth(2, [7, 7, 7]), b), 6)
        for t, q in [(self.truth(2, [7, 7, 7]), p),  # a paced load written at once
                     (self.truth(2, [1, 2, 3]), b),  # a burst written event by event
                     (self.truth(1, [1, 2, 3]), p),  # a request missing
                     (self.truth(2, [1, 2]), p),  # short responses
                     ([dict(x, completed=False) for x in self.truth(2, [1, 2, 3])], p)]:
            with self.assertRaises(harness.CheckFailed):
                event_floor.truth_events(t, q)

    def test_ringperf_figures_come_from_its_threads(self):
        p = event_floor.plan("paced", 1, 1, 10, 0.01)  # 1 request, 10 events
        j = {"ringperf": {"threads": [{"name": "main", "cpu_ns": 5},
                                      {"name": "aggregator", "cpu_ns": 2_000},
                                      {"name": "worker_0", "cpu_ns": 50_000}]},
             "benchmark_duration": {"avg": 0.5}}
        f = event_floor.ringperf_figures(j, 10, p)
        self.assertEqual((f["ns_per_event"], f["aggregator_ns_per_event"], f["rate"]),
                         (5_000.0, 200.0, 20.0))
        with self.assertRaises(event_floor.Refused):
            event_floor.ringperf_figures(j, 9, p)
        j["ringperf"]["threads"][2]["cpu_ns"] = 0
        with self.assertRaises(harness.CpuFigureRefused):
            event_floor.ringperf_figures(j, 10, p)
        self.assertEqual(len(harness.REFUSED), 1, "the refusal makes the script exit 1")

    def test_ratio_of_figures_only(self):
        self.assertEqual(event_floor.ratio(600.0, 100.0), 6.0)
        for a, b in [(0, 100.0), (600.0, 0), (None, 1.0), (float("nan"), 1.0), (-1.0, 1.0),
                     (1.0, float("inf")), (True, 1.0)]:
            with self.assertRaises(event_floor.Refused):
                event_floor.ratio(a, b)

    def rows(self, kind, floor_ns, ringperf_ns):
        out = []
        for i, (f, r) in enumerate(zip(floor_ns, ringperf_ns)):
            out.append({"load": kind, "side": "floor", "round": i, "ns_per_event": f,
                        "rate": 1000.0, "events_per_wakeup": 1.0})
            out.append({"load": kind, "side": "ringperf", "round": i, "ns_per_event": r,
                        "aggregator_ns_per_event": 10.0, "rate": 990.0})
        return out

    def test_medians_ratio_and_verdicts(self):
        rows = (self.rows("paced", [4000, 5000, 9000], [5000, 6000, 5500])
                + self.rows("burst", [60, 80, 100], [100, 140, 120]))
        s = {x["load"]: x for x in event_floor.summarize(rows, ["paced", "burst"])}
        self.assertEqual((s["paced"]["floor_ns"], s["paced"]["ringperf_ns"]), (5000, 5500))
        self.assertAlmostEqual(s["paced"]["ratio"], 1.1)
        self.assertAlmostEqual(s["paced"]["ratio_min"], 5500 / 9000)
        self.assertAlmostEqual(s["paced"]["ratio_max"], 1.25)
        self.assertEqual(event_floor.verdict(s["paced"]), "met")
        self.assertAlmostEqual(s["burst"]["ratio"], 1.5)
        self.assertEqual(event_floor.verdict(s["burst"]), "not met")
        # a burst within 1.2x of its floor but over 150 ns per event is not met either
        s = event_floor.summarize(self.rows("burst", [200], [210]), ["burst"])[0]
        self.assertEqual(event_floor.verdict(s), "not met")
        s = event_floor.summarize(self.rows("burst", [100], [110]), ["burst"])[0]
        self.assertEqual(event_floor.verdict(s), "met")

    def test_a_failed_run_fails_its_load(self):
        rows = self.rows("paced", [4000, 5000], [5000, 6000])
        rows[3] = {"load": "paced", "side": "ringperf", "round": 1, "failed": "exit 1"}
        s = event_floor.summarize(rows + self.rows("burst", [60], [100]), ["paced", "burst"])
        self.assertEqual(s[0], {"load": "paced", "failed": "ringperf round 1: exit 1"})
        self.assertEqual(event_floor.verdict(s[0]), "FAILED")
        self.assertNotIn("failed", s[1])
        only_floor = [r for r in self.rows("burst", [60], [100]) if r["side"] == "floor"]
        self.assertIn("failed", event_floor.summarize(only_floor, ["burst"])[0])
        plans = {"paced": event_floor.plan("paced", 32, 1, 100, 2),
                 "burst": event_floor.plan("burst", 32, 5, 64, 2)}
        text = event_floor.table(s, plans, "1.0 1.0 1.0", "2.0 1.0 1.0", "uring")
        self.assertIn("| FAILED: ringperf round 1: exit 1 |", text)
        self.assertIn("| **1.67×** (1.67–1.67) |", text)


if __name__ == "__main__":
    unittest.main()
