//! The few OTLP protobuf messages a metrics export needs, written by hand (docs/integrations.md):
//! `ExportMetricsServiceRequest` → `ResourceMetrics` → `ScopeMetrics` → `Metric` with a
//! cumulative `Histogram` or `Sum` (a counter, monotonic, or an up-down counter). Field numbers are those of opentelemetry-proto's `metrics/v1`,
//! `common/v1` and `resource/v1` files. Only a writer: ringperf never reads OTLP.

/// A protobuf message being written.
#[derive(Default)]
pub struct Pb(pub Vec<u8>);

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

impl Pb {
    fn key(&mut self, field: u32, wire: u8) {
        varint(&mut self.0, (u64::from(field) << 3) | u64::from(wire));
    }

    /// A length-delimited field (a string, bytes or an embedded message).
    pub fn bytes(&mut self, field: u32, b: &[u8]) {
        self.key(field, 2);
        varint(&mut self.0, b.len() as u64);
        self.0.extend_from_slice(b);
    }

    pub fn string(&mut self, field: u32, s: &str) {
        self.bytes(field, s.as_bytes());
    }

    /// An embedded message, written by `f`.
    pub fn message(&mut self, field: u32, f: impl FnOnce(&mut Pb)) {
        let mut m = Pb::default();
        f(&mut m);
        self.bytes(field, &m.0);
    }

    pub fn uint(&mut self, field: u32, v: u64) {
        self.key(field, 0);
        varint(&mut self.0, v);
    }

    pub fn boolean(&mut self, field: u32, v: bool) {
        self.uint(field, u64::from(v));
    }

    pub fn fixed64(&mut self, field: u32, v: u64) {
        self.key(field, 1);
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    pub fn double(&mut self, field: u32, v: f64) {
        self.fixed64(field, v.to_bits());
    }

    /// A packed repeated `fixed64` (or `double`, given as bits).
    pub fn packed64(&mut self, field: u32, vs: impl Iterator<Item = u64>) {
        let mut b = Vec::new();
        for v in vs {
            b.extend_from_slice(&v.to_le_bytes());
        }
        self.bytes(field, &b);
    }
}

/// An attribute's value (`AnyValue`).
#[derive(Clone, Debug, PartialEq, PartialOrd)]
pub enum AttrValue {
    Str(String),
    Bool(bool),
    Int(i64),
    Double(f64),
}

/// `KeyValue { key = 1; value = 2 }`, `AnyValue { string_value = 1; bool_value = 2;
/// int_value = 3; double_value = 4 }`.
pub fn key_value(pb: &mut Pb, field: u32, key: &str, v: &AttrValue) {
    pb.message(field, |kv| {
        kv.string(1, key);
        kv.message(2, |av| match v {
            AttrValue::Str(s) => av.string(1, s),
            AttrValue::Bool(b) => av.boolean(2, *b),
            AttrValue::Int(i) => av.uint(3, *i as u64),
            AttrValue::Double(d) => av.double(4, *d),
        });
    });
}

/// One cumulative histogram data point.
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramPoint {
    pub attributes: Vec<(String, AttrValue)>,
    pub count: u64,
    pub sum: f64,
    pub min: f64,
    pub max: f64,
    /// One more than the bounds.
    pub bucket_counts: Vec<u64>,
    pub bounds: &'static [f64],
}

/// One histogram metric and its points.
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramMetric {
    pub name: String,
    pub description: String,
    pub unit: String,
    pub points: Vec<HistogramPoint>,
}

/// One cumulative sum data point (`NumberDataPoint` with `as_double`).
#[derive(Clone, Debug, PartialEq)]
pub struct SumPoint {
    pub attributes: Vec<(String, AttrValue)>,
    pub value: f64,
}

/// One sum metric: a counter (`monotonic`) or an up-down counter, and its points.
#[derive(Clone, Debug, PartialEq)]
pub struct SumMetric {
    pub name: String,
    pub description: String,
    pub unit: String,
    pub monotonic: bool,
    pub points: Vec<SumPoint>,
}

/// `AGGREGATION_TEMPORALITY_CUMULATIVE`.
const CUMULATIVE: u64 = 2;

/// The whole `ExportMetricsServiceRequest`: one resource, one scope.
pub fn export_request(
    resource: &[(String, String)],
    scope: &str,
    metrics: &[HistogramMetric],
    sums: &[SumMetric],
    start_ns: u64,
    now_ns: u64,
) -> Vec<u8> {
    let mut req = Pb::default();
    req.message(1, |rm| {
        rm.message(1, |r| {
            for (k, v) in resource {
                key_value(r, 1, k, &AttrValue::Str(v.clone()));
            }
        });
        rm.message(2, |sm| {
            sm.message(1, |s| s.string(1, scope));
            for m in metrics {
                sm.message(2, |mm| histogram(mm, m, start_ns, now_ns));
            }
            for m in sums {
                sm.message(2, |mm| sum(mm, m, start_ns, now_ns));
            }
        });
    });
    req.0
}

/// `Metric { name = 1; description = 2; unit = 3; histogram = 9 }`, `Histogram { data_points
/// = 1; aggregation_temporality = 2 }`.
fn histogram(mm: &mut Pb, m: &HistogramMetric, start_ns: u64, now_ns: u64) {
    mm.string(1, &m.name);
    mm.string(2, &m.description);
    mm.string(3, &m.unit);
    mm.message(9, |h| {
        for p in &m.points {
            // HistogramDataPoint { start_time_unix_nano = 2; time_unix_nano = 3; count = 4;
            // sum = 5; bucket_counts = 6; explicit_bounds = 7; attributes = 9; min = 11;
            // max = 12 }
            h.message(1, |dp| {
                dp.fixed64(2, start_ns);
                dp.fixed64(3, now_ns);
                dp.fixed64(4, p.count);
                dp.double(5, p.sum);
                dp.packed64(6, p.bucket_counts.iter().copied());
                dp.packed64(7, p.bounds.iter().map(|b| b.to_bits()));
                for (k, v) in &p.attributes {
                    key_value(dp, 9, k, v);
                }
                dp.double(11, p.min);
                dp.double(12, p.max);
            });
        }
        h.uint(2, CUMULATIVE);
    });
}

/// `Metric { name = 1; description = 2; unit = 3; sum = 7 }`, `Sum { data_points = 1;
/// aggregation_temporality = 2; is_monotonic = 3 }`, `NumberDataPoint { start_time_unix_nano = 2;
/// time_unix_nano = 3; as_double = 4; attributes = 7 }`.
fn sum(mm: &mut Pb, m: &SumMetric, start_ns: u64, now_ns: u64) {
    mm.string(1, &m.name);
    mm.string(2, &m.description);
    mm.string(3, &m.unit);
    mm.message(7, |s| {
        for p in &m.points {
            s.message(1, |dp| {
                dp.fixed64(2, start_ns);
                dp.fixed64(3, now_ns);
                dp.double(4, p.value);
                for (k, v) in &p.attributes {
                    key_value(dp, 7, k, v);
                }
            });
        }
        s.uint(2, CUMULATIVE);
        s.boolean(3, m.monotonic);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_as_protobuf_writes_them() {
        // The protobuf encoding guide's examples: 1 → 01, 150 → 96 01, 300 → ac 02.
        for (v, want) in [
            (1u64, &[0x01u8][..]),
            (150, &[0x96, 0x01]),
            (300, &[0xac, 0x02]),
        ] {
            let mut out = Vec::new();
            varint(&mut out, v);
            assert_eq!(out, want);
        }
        // Field 1 varint 150: 08 96 01; field 2 string "testing": 12 07 74 65 73 74 69 6e 67.
        let mut pb = Pb::default();
        pb.uint(1, 150);
        pb.string(2, "testing");
        assert_eq!(pb.0, b"\x08\x96\x01\x12\x07testing");
    }

    #[test]
    fn a_negative_int_attribute_is_ten_bytes() {
        let mut pb = Pb::default();
        key_value(&mut pb, 1, "k", &AttrValue::Int(-1));
        // KeyValue(len) { key "k", value(len) { int_value(3) = 10 × 0xff-ish bytes } }
        let tail = &pb.0[pb.0.len() - 10..];
        assert_eq!(
            tail,
            &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]
        );
    }
}
