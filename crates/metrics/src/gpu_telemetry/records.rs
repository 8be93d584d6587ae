//! Per-GPU records rebuilt from what the scraper stored: one per GPU per unique page, as AIPerf
//! 0.13's DCGM collector makes them, and their `gpu_telemetry_export.jsonl` lines.
//!
//! A sample counts when its series has an integer `gpu` label and its metric maps to a
//! [`super::fields::FIELDS`] row; its value is scaled to AIPerf's unit. A GPU's metadata comes
//! from the labels of its series (`modelName`, `UUID`, `pci_bus_id`, `device`, `Hostname`,
//! `namespace`, `pod`; a DCGM exporter puts them all on every series). Duplicate pages (identical to the previous one)
//! make no record, as in AIPerf. Non-finite samples never reach the store.

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde_json::{Map, Value};

use super::fields::{FIELDS, lookup};
use crate::server_metrics::store::{EndpointStore, SeriesData};
use ringperf_wire::prom::LabelSet;

/// Who a GPU is, from its labels.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GpuMeta {
    /// `gpu` label.
    pub index: u32,
    /// `UUID` label (AIPerf keys GPUs by it; empty when absent).
    pub uuid: String,
    /// `modelName` label.
    pub model_name: String,
    /// `pci_bus_id` label.
    pub pci_bus_id: Option<String>,
    /// `device` label.
    pub device: Option<String>,
    /// `Hostname` label.
    pub hostname: Option<String>,
    /// `namespace` label.
    pub namespace: Option<String>,
    /// `pod` label.
    pub pod_name: Option<String>,
}

impl GpuMeta {
    /// Fills what is still unknown from `labels`.
    fn fill(&mut self, labels: &LabelSet) {
        let get = |k: &str| labels.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        if self.uuid.is_empty() {
            self.uuid = get("UUID").unwrap_or_default();
        }
        if self.model_name.is_empty() {
            self.model_name = get("modelName").unwrap_or_default();
        }
        for (slot, k) in [
            (&mut self.pci_bus_id, "pci_bus_id"),
            (&mut self.device, "device"),
            (&mut self.hostname, "Hostname"),
            (&mut self.namespace, "namespace"),
            (&mut self.pod_name, "pod"),
        ] {
            if slot.is_none() {
                *slot = get(k);
            }
        }
    }
}

/// One GPU in one scrape.
#[derive(Clone, Debug, PartialEq)]
pub struct GpuRecord {
    /// Wall-clock ns the page was read.
    pub ts_ns: u64,
    /// The GPU.
    pub meta: GpuMeta,
    /// Scaled value per [`FIELDS`] row (`None`: not on the page).
    pub values: [Option<f64>; FIELDS.len()],
    /// The endpoint the page came from.
    pub source_url: String,
}

fn gpu_index(labels: &LabelSet) -> Option<u32> {
    labels
        .iter()
        .find(|(n, _)| n == "gpu")
        .and_then(|(_, v)| v.trim().parse().ok())
}

/// The records of one endpoint, in time order, then GPU index order.
#[must_use]
pub fn records(es: &EndpointStore) -> Vec<GpuRecord> {
    // Unique updates only: a duplicate page is stored for server metrics' sake, not here.
    let unique = &es.update_ts_ns;
    let mut metas: BTreeMap<u32, GpuMeta> = BTreeMap::new();
    let mut by_key: BTreeMap<(u64, u32), [Option<f64>; FIELDS.len()]> = BTreeMap::new();
    for ((name, labels), entry) in &es.series {
        let Some(gpu) = gpu_index(labels) else {
            continue;
        };
        metas
            .entry(gpu)
            .or_insert_with(|| GpuMeta {
                index: gpu,
                ..GpuMeta::default()
            })
            .fill(labels);
        let (Some(field), SeriesData::Scalar(s)) = (lookup(name), &entry.data) else {
            continue;
        };
        for (&ts, &v) in s.ts_ns.iter().zip(&s.values) {
            if !v.is_finite() || unique.binary_search(&ts).is_err() {
                continue;
            }
            let slot = by_key.entry((ts, gpu)).or_insert([None; FIELDS.len()]);
            slot[field] = Some(v * FIELDS[field].scale);
        }
    }
    by_key
        .into_iter()
        .filter_map(|((ts_ns, gpu), values)| {
            Some(GpuRecord {
                ts_ns,
                meta: metas.get(&gpu)?.clone(),
                values,
                source_url: es.url.clone(),
            })
        })
        .collect()
}

impl GpuRecord {
    /// The JSONL object, keys in AIPerf 0.13's order (`None` fields left out, as AIPerf's
    /// `exclude_none`).
    #[must_use]
    pub fn to_json(&self) -> Value {
        let m = &self.meta;
        let mut o = Map::new();
        o.insert("gpu_index".into(), Value::from(m.index));
        o.insert("gpu_uuid".into(), Value::from(m.uuid.as_str()));
        o.insert("gpu_model_name".into(), Value::from(m.model_name.as_str()));
        let opt = |o: &mut Map<String, Value>, k: &str, v: &Option<String>| {
            if let Some(v) = v {
                o.insert(k.into(), Value::from(v.as_str()));
            }
        };
        opt(&mut o, "pci_bus_id", &m.pci_bus_id);
        opt(&mut o, "device", &m.device);
        opt(&mut o, "hostname", &m.hostname);
        opt(&mut o, "namespace", &m.namespace);
        opt(&mut o, "pod_name", &m.pod_name);
        o.insert("platform".into(), Value::from("nvidia"));
        o.insert("timestamp_ns".into(), Value::from(self.ts_ns));
        o.insert(
            "telemetry_source_url".into(),
            Value::from(self.source_url.as_str()),
        );
        let mut data = Map::new();
        for (f, v) in FIELDS.iter().zip(&self.values) {
            if let Some(v) = v {
                data.insert(f.key.into(), Value::from(*v));
            }
        }
        o.insert("telemetry_data".into(), Value::Object(data));
        Value::Object(o)
    }
}

/// Writes `records` as JSONL, one line each.
///
/// # Errors
/// The writer's.
pub fn write_jsonl(out: &mut impl Write, records: &[GpuRecord]) -> io::Result<()> {
    for r in records {
        serde_json::to_writer(&mut *out, &r.to_json())?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_wire::prom::parse_scrape;

    const PAGE: &str = "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n\
# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n\
DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-b\",pci_bus_id=\"00000000:02:00.0\",device=\"nvidia1\",modelName=\"NVIDIA H100\",Hostname=\"node\"} 200.5\n\
DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\",pci_bus_id=\"00000000:01:00.0\",device=\"nvidia0\",modelName=\"NVIDIA H100\",Hostname=\"node\"} 100.25\n\
# TYPE DCGM_FI_DEV_FB_USED gauge\n\
DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA H100\"} 1000\n\
# TYPE DCGM_FI_DEV_SM_CLOCK gauge\n\
DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",UUID=\"GPU-a\",modelName=\"NVIDIA H100\"} 1980\n\
# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n\
DCGM_FI_DEV_GPU_TEMP{gpu=\"x\",UUID=\"GPU-c\"} 50\n\
DCGM_FI_DEV_GPU_TEMP{UUID=\"GPU-d\"} 51\n";

    fn store(pages: &[(u64, &str)], dup_of_previous: &[bool]) -> EndpointStore {
        let mut es = EndpointStore::new("http://h:9400/metrics");
        for ((ts, p), dup) in pages.iter().zip(dup_of_previous) {
            let s = match parse_scrape(p.as_bytes()) {
                Ok(s) => s,
                Err(e) => panic!("{e:?}"),
            };
            es.record_fetch(*ts, 1, *dup);
            es.insert(*ts, &s);
        }
        es
    }

    #[test]
    fn one_record_per_gpu_per_unique_page() {
        let es = store(&[(10, PAGE), (20, PAGE), (30, PAGE)], &[false, true, false]);
        let r = records(&es);
        let at: Vec<(u64, u32)> = r.iter().map(|r| (r.ts_ns, r.meta.index)).collect();
        assert_eq!(at, [(10, 0), (10, 1), (30, 0), (30, 1)]);
        let g0 = &r[0];
        assert_eq!(g0.meta.uuid, "GPU-a");
        assert_eq!(g0.meta.hostname.as_deref(), Some("node"));
        assert_eq!(g0.values[0], Some(100.25));
        assert!((g0.values[4].unwrap() - 1.048576).abs() < 1e-12);
        // Clocks are not read; a non-integer or missing `gpu` label is skipped.
        assert_eq!(g0.values.iter().filter(|v| v.is_some()).count(), 2);
        assert!(
            r.iter()
                .all(|r| r.meta.uuid != "GPU-c" && r.meta.uuid != "GPU-d")
        );
    }

    #[test]
    fn jsonl_line_has_aiperfs_keys_in_order() {
        let es = store(&[(10, PAGE)], &[false]);
        let r = records(&es);
        let mut out = Vec::new();
        write_jsonl(&mut out, &r[..1]).unwrap();
        let line = String::from_utf8(out).unwrap();
        assert_eq!(
            line,
            "{\"gpu_index\":0,\"gpu_uuid\":\"GPU-a\",\"gpu_model_name\":\"NVIDIA H100\",\
             \"pci_bus_id\":\"00000000:01:00.0\",\"device\":\"nvidia0\",\"hostname\":\"node\",\
             \"platform\":\"nvidia\",\"timestamp_ns\":10,\
             \"telemetry_source_url\":\"http://h:9400/metrics\",\"telemetry_data\":\
             {\"nvidia_power_usage\":100.25,\"nvidia_memory_used\":1.0485760000000002}}\n"
        );
    }
}
