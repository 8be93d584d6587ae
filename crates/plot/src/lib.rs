//! ringperf-plot: `ringperf plot`, `--auto-plot` and `ringperf analyze swim-lane`. It reads
//! artifact directories back (single runs, multi-run directories, AIPerf's sweep and search
//! layouts), turns them into chart series, draws PNG and SVG charts with plotters (text from the
//! bundled DejaVu Sans Mono), writes the self-contained `report.html`, and draws AIPerf's swim
//! lane. It builds on `ringperf-metrics` (metric definitions, export file names) and takes its
//! commands as plain values: it never sees the CLI.

pub mod plot;
