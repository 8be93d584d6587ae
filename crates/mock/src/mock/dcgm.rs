//! The mock's DCGM exporter page at `/dcgm/metrics` ([`MockConfig::dcgm_gpus`] GPUs; 404 when
//! 0): the families a DCGM exporter serves, labelled per GPU as DCGM labels them (`gpu`,
//! `UUID`, `pci_bus_id`, `device`, `modelName`, `Hostname`), with values that follow the load
//! the mock is serving, deterministically:
//!
//! with `r` = completion requests in flight (all threads) when the page is made and `g` the GPU
//! index,
//! - power `75.25 + 10·g + 12.5·min(r, 16)` W; energy (counter, mJ) grows by the power of
//!   each page times the wall time since the previous page, from `1e9 + 1e6·g` mJ;
//! - GPU utilization `min(100, 20·r + g)` %, memory copy utilization `min(100, 7·r + 2·g)` %,
//!   SM active `min(1, 0.15·r)` (a ratio);
//! - framebuffer used `1024 + 512·min(r, 64) + 64·g` MiB, free = 81559 MiB − used; SM clock
//!   1980 MHz under load, 345 idle; memory clock 2619 MHz; temperature `35 + g + min(3·r, 45)` °C;
//! - XID errors 0; power violation (counter, ns) grows by `1000·r` per page.
//!
//! Every page served by `GET` is kept, with the wall-clock ns it was made at, for a test to
//! recompute what a client should report ([`MockServer::dcgm_pages`]).
//!
//! [`MockConfig::dcgm_gpus`]: super::MockConfig::dcgm_gpus
//! [`MockServer::dcgm_pages`]: super::MockServer::dcgm_pages

use std::fmt::Write as _;
use std::sync::Mutex;

/// One DCGM page the mock served (a line of `mock-server --dcgm-log`).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DcgmPage {
    /// Wall-clock ns (`CLOCK_REALTIME`) the page was made at.
    pub wall_ns: u64,
    /// Completion requests in flight when it was made.
    pub in_flight: u64,
    /// The page as sent.
    pub body: String,
}

/// The exporter's state: counters and the pages served.
#[derive(Debug, Default)]
pub(crate) struct Dcgm {
    inner: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    last_wall_ns: Option<u64>,
    energy_mj: Vec<f64>,
    violation_ns: Vec<u64>,
    pages: Vec<DcgmPage>,
}

/// DCGM's model name for the pretend GPUs.
const MODEL: &str = "NVIDIA H100 80GB HBM3";
/// Framebuffer size, MiB.
const FB_TOTAL_MIB: u64 = 81_559;

/// GPU `g`'s UUID.
#[must_use]
pub fn gpu_uuid(g: u32) -> String {
    format!(
        "GPU-{:08x}-5eed-4000-8000-{:012x}",
        0xd6c0_0000u32 + g,
        u64::from(g)
    )
}

/// Power of GPU `g` with `r` requests in flight, W.
#[must_use]
pub fn power_w(g: u32, r: u64) -> f64 {
    75.25 + 10.0 * f64::from(g) + 12.5 * r.min(16) as f64
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

impl Dcgm {
    /// Makes the page for `gpus` GPUs with `in_flight` requests running at `wall_ns`; a `GET`
    /// (`keep`) is recorded.
    pub(crate) fn page(&self, gpus: u32, in_flight: u64, wall_ns: u64, keep: bool) -> String {
        let Ok(mut st) = self.inner.lock() else {
            return String::new();
        };
        let n = gpus as usize;
        if st.energy_mj.len() != n {
            st.energy_mj = (0..gpus).map(|g| 1e9 + 1e6 * f64::from(g)).collect();
            st.violation_ns = vec![0; n];
        }
        let dt_s = st
            .last_wall_ns
            .map_or(0.0, |t| wall_ns.saturating_sub(t) as f64 / 1e9);
        st.last_wall_ns = Some(wall_ns);
        for g in 0..gpus {
            let i = g as usize;
            st.energy_mj[i] += power_w(g, in_flight) * dt_s * 1e3;
            st.violation_ns[i] += 1000 * in_flight;
        }
        let r = in_flight;
        let labels = |g: u32| {
            format!(
                "gpu=\"{g}\",UUID=\"{}\",pci_bus_id=\"00000000:{:02X}:00.0\",device=\"nvidia{g}\",modelName=\"{MODEL}\",Hostname=\"mock-dcgm\"",
                gpu_uuid(g),
                0x18 + g
            )
        };
        type Value<'a> = Box<dyn Fn(u32) -> String + 'a>;
        let energy = st.energy_mj.clone();
        let violation = st.violation_ns.clone();
        let rows: [(&str, &str, &str, Value<'_>); 13] = [
            (
                "DCGM_FI_DEV_SM_CLOCK",
                "gauge",
                "SM clock frequency (in MHz).",
                Box::new(|_| (if r > 0 { 1980 } else { 345 }).to_string()),
            ),
            (
                "DCGM_FI_DEV_MEM_CLOCK",
                "gauge",
                "Memory clock frequency (in MHz).",
                Box::new(|_| "2619".into()),
            ),
            (
                "DCGM_FI_DEV_GPU_TEMP",
                "gauge",
                "GPU temperature (in C).",
                Box::new(|g| (35 + u64::from(g) + (3 * r).min(45)).to_string()),
            ),
            (
                "DCGM_FI_DEV_POWER_USAGE",
                "gauge",
                "Power draw (in W).",
                Box::new(|g| format!("{:.3}", power_w(g, r))),
            ),
            (
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
                "counter",
                "Total energy consumption since boot (in mJ).",
                Box::new(|g| format!("{:.0}", energy[g as usize].floor())),
            ),
            (
                "DCGM_FI_DEV_GPU_UTIL",
                "gauge",
                "GPU utilization (in %).",
                Box::new(|g| (20 * r + u64::from(g)).min(100).to_string()),
            ),
            (
                "DCGM_FI_DEV_MEM_COPY_UTIL",
                "gauge",
                "Memory utilization (in %).",
                Box::new(|g| (7 * r + 2 * u64::from(g)).min(100).to_string()),
            ),
            (
                "DCGM_FI_DEV_ENC_UTIL",
                "gauge",
                "Encoder utilization (in %).",
                Box::new(|_| "0".into()),
            ),
            (
                "DCGM_FI_DEV_DEC_UTIL",
                "gauge",
                "Decoder utilization (in %).",
                Box::new(|_| "0".into()),
            ),
            (
                "DCGM_FI_DEV_XID_ERRORS",
                "gauge",
                "Value of the last XID error encountered.",
                Box::new(|_| "0".into()),
            ),
            (
                "DCGM_FI_DEV_FB_FREE",
                "gauge",
                "Framebuffer memory free (in MiB).",
                Box::new(|g| (FB_TOTAL_MIB - fb_used_mib(g, r)).to_string()),
            ),
            (
                "DCGM_FI_DEV_FB_USED",
                "gauge",
                "Framebuffer memory used (in MiB).",
                Box::new(|g| fb_used_mib(g, r).to_string()),
            ),
            (
                "DCGM_FI_DEV_POWER_VIOLATION",
                "counter",
                "Throttling duration due to power constraints (in us).",
                Box::new(|g| violation[g as usize].to_string()),
            ),
        ];
        let mut out = String::new();
        for (name, kind, help, value) in &rows {
            family(&mut out, name, kind, help);
            for g in 0..gpus {
                let _ = writeln!(out, "{name}{{{}}} {}", labels(g), value(g));
            }
        }
        family(
            &mut out,
            "DCGM_FI_PROF_SM_ACTIVE",
            "gauge",
            "The ratio of cycles an SM has at least 1 warp assigned (in %).",
        );
        for g in 0..gpus {
            let _ = writeln!(
                out,
                "DCGM_FI_PROF_SM_ACTIVE{{{}}} {}",
                labels(g),
                (0.15 * r as f64).min(1.0)
            );
        }
        if keep {
            st.pages.push(DcgmPage {
                wall_ns,
                in_flight,
                body: out.clone(),
            });
        }
        out
    }

    /// Every page served by `GET` so far.
    pub(crate) fn pages(&self) -> Vec<DcgmPage> {
        self.inner
            .lock()
            .map(|s| s.pages.clone())
            .unwrap_or_default()
    }
}

fn fb_used_mib(g: u32, r: u64) -> u64 {
    1024 + 512 * r.min(64) + 64 * u64::from(g)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_wire::prom::parse_scrape;

    #[test]
    fn page_parses_follows_load_and_integrates_energy() {
        let d = Dcgm::default();
        let idle = d.page(2, 0, 1_000_000_000, true);
        let busy = d.page(2, 4, 3_000_000_000, true);
        let _head = d.page(2, 4, 3_500_000_000, false);
        assert_eq!(d.pages().len(), 2);
        let s = parse_scrape(busy.as_bytes()).unwrap_or_else(|e| panic!("{e:?}"));
        let get = |name: &str, gpu: &str| {
            s.families
                .iter()
                .find(|f| f.name == name)
                .and_then(|f| {
                    f.series
                        .iter()
                        .find(|(l, _)| l.iter().any(|(k, v)| k == "gpu" && v == gpu))
                })
                .map(|(_, v)| format!("{v:?}"))
                .unwrap_or_default()
        };
        assert!(
            get("DCGM_FI_DEV_GPU_UTIL", "1").contains("81"),
            "{}",
            get("DCGM_FI_DEV_GPU_UTIL", "1")
        );
        // 2 s at the busy power of GPU 0: 125.25 W → 250 500 mJ on top of 1e9.
        assert!(get("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "0").contains("1000250500"));
        assert!(idle.contains("DCGM_FI_DEV_SM_CLOCK{gpu=\"0\""));
        assert!(idle.contains("UUID=\"GPU-d6c00001-5eed-4000-8000-000000000001\""));
        assert_eq!(power_w(1, 100), 285.25);
    }
}
