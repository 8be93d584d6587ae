//! DCGM field mapping and unit scaling of AIPerf's DCGM collector (docs/output-formats.md): one row
//! per AIPerf metric, in AIPerf's metric order (the order of the JSONL `telemetry_data`, the
//! JSON `metrics` and the CSV rows).

/// One AIPerf GPU metric and the DCGM field it is read from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Field {
    /// AIPerf's metric key (`nvidia_power_usage`).
    pub key: &'static str,
    /// The DCGM exporter's metric name, `_total` stripped (`DCGM_FI_DEV_POWER_USAGE`).
    pub dcgm: &'static str,
    /// AIPerf's display name (`NVIDIA GPU Power Usage`).
    pub display: &'static str,
    /// AIPerf's unit string (`W`).
    pub unit: &'static str,
    /// Factor from DCGM's unit to `unit`.
    pub scale: f64,
    /// A cumulative counter: summarized by its delta over the window, not by statistics.
    pub counter: bool,
}

const fn gauge(
    key: &'static str,
    dcgm: &'static str,
    display: &'static str,
    unit: &'static str,
) -> Field {
    Field {
        key,
        dcgm,
        display,
        unit,
        scale: 1.0,
        counter: false,
    }
}

/// Every NVIDIA metric AIPerf 0.13 reads from a DCGM exporter.
pub const FIELDS: [Field; 11] = [
    gauge(
        "nvidia_power_usage",
        "DCGM_FI_DEV_POWER_USAGE",
        "NVIDIA GPU Power Usage",
        "W",
    ),
    Field {
        // DCGM counts mJ; AIPerf reports MJ.
        scale: 1e-9,
        counter: true,
        ..gauge(
            "nvidia_energy_consumption",
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
            "NVIDIA Energy Consumption",
            "MJ",
        )
    },
    gauge(
        "nvidia_gpu_utilization",
        "DCGM_FI_DEV_GPU_UTIL",
        "NVIDIA GPU Utilization",
        "%",
    ),
    gauge(
        "nvidia_memory_utilization",
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        "NVIDIA Memory Utilization",
        "%",
    ),
    Field {
        // MiB → GB.
        scale: 1.048576e-3,
        ..gauge(
            "nvidia_memory_used",
            "DCGM_FI_DEV_FB_USED",
            "NVIDIA GPU Memory Used",
            "GB",
        )
    },
    gauge(
        "nvidia_temperature",
        "DCGM_FI_DEV_GPU_TEMP",
        "NVIDIA GPU Temperature",
        "°C",
    ),
    Field {
        // A ratio 0–1 → %.
        scale: 100.0,
        ..gauge(
            "nvidia_sm_utilization",
            "DCGM_FI_PROF_SM_ACTIVE",
            "NVIDIA SM Utilization",
            "%",
        )
    },
    gauge(
        "nvidia_decoder_utilization",
        "DCGM_FI_DEV_DEC_UTIL",
        "NVIDIA Decoder Utilization",
        "%",
    ),
    gauge(
        "nvidia_encoder_utilization",
        "DCGM_FI_DEV_ENC_UTIL",
        "NVIDIA Encoder Utilization",
        "%",
    ),
    Field {
        counter: true,
        ..gauge(
            "nvidia_xid_errors",
            "DCGM_FI_DEV_XID_ERRORS",
            "NVIDIA XID Errors",
            "count",
        )
    },
    Field {
        // ns → µs.
        scale: 1e-3,
        counter: true,
        ..gauge(
            "nvidia_power_violation",
            "DCGM_FI_DEV_POWER_VIOLATION",
            "NVIDIA Power Violation",
            "us",
        )
    },
];

/// The index in [`FIELDS`] of the metric a DCGM exporter's metric `name` maps to (a trailing
/// `_total` is ignored, as AIPerf does); `None` for the fields AIPerf does not read (clocks,
/// free memory, …).
#[must_use]
pub fn lookup(name: &str) -> Option<usize> {
    let base = name.strip_suffix("_total").unwrap_or(name);
    FIELDS.iter().position(|f| f.dcgm == base)
}

/// The index in [`FIELDS`] of AIPerf metric `key`.
#[must_use]
pub fn by_key(key: &str) -> Option<usize> {
    FIELDS.iter().position(|f| f.key == key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scaled(dcgm: &str, raw: f64) -> (&'static str, f64, &'static str) {
        let f = FIELDS[lookup(dcgm).expect("mapped")];
        (f.key, raw * f.scale, f.unit)
    }

    #[test]
    fn mapping_and_scaling_are_aiperfs() {
        assert_eq!(
            scaled("DCGM_FI_DEV_POWER_USAGE", 312.5),
            ("nvidia_power_usage", 312.5, "W")
        );
        let (k, v, u) = scaled("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 2.5e12);
        assert_eq!((k, u), ("nvidia_energy_consumption", "MJ"));
        assert!((v - 2500.0).abs() < 1e-9, "{v}");
        let (k, v, u) = scaled("DCGM_FI_DEV_FB_USED", 1000.0);
        assert_eq!((k, u), ("nvidia_memory_used", "GB"));
        assert!((v - 1.048576).abs() < 1e-12, "{v}");
        assert_eq!(
            scaled("DCGM_FI_PROF_SM_ACTIVE", 0.25),
            ("nvidia_sm_utilization", 25.0, "%")
        );
        let (k, v, u) = scaled("DCGM_FI_DEV_POWER_VIOLATION", 12_000.0);
        assert_eq!((k, u), ("nvidia_power_violation", "us"));
        assert!((v - 12.0).abs() < 1e-12);
        assert_eq!(
            scaled("DCGM_FI_DEV_GPU_TEMP", 41.0),
            ("nvidia_temperature", 41.0, "°C")
        );
        assert_eq!(
            scaled("DCGM_FI_DEV_GPU_UTIL", 87.0),
            ("nvidia_gpu_utilization", 87.0, "%")
        );
        assert_eq!(
            scaled("DCGM_FI_DEV_MEM_COPY_UTIL", 9.0),
            ("nvidia_memory_utilization", 9.0, "%")
        );
        assert_eq!(
            scaled("DCGM_FI_DEV_XID_ERRORS", 2.0),
            ("nvidia_xid_errors", 2.0, "count")
        );
    }

    #[test]
    fn total_suffix_is_ignored_and_unmapped_fields_are_none() {
        assert_eq!(
            lookup("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION_total"),
            lookup("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")
        );
        assert_eq!(lookup("DCGM_FI_DEV_SM_CLOCK"), None);
        assert_eq!(lookup("DCGM_FI_DEV_FB_FREE"), None);
        assert_eq!(lookup("vllm:num_requests_running"), None);
    }

    #[test]
    fn counters_are_energy_xid_and_power_violation() {
        let counters: Vec<&str> = FIELDS.iter().filter(|f| f.counter).map(|f| f.key).collect();
        assert_eq!(
            counters,
            [
                "nvidia_energy_consumption",
                "nvidia_xid_errors",
                "nvidia_power_violation"
            ]
        );
        assert_eq!(by_key("nvidia_temperature"), Some(5));
    }
}
