//! Certificate reader on arbitrary bytes: no panic; every part it returns lies inside the input,
//! the TBSCertificate first; validity times within the years 0000-9999; and a certificate cut one
//! byte short is never read.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringperf_wire::x509::parse;

/// `part` is a slice of `data`.
fn inside(data: &[u8], part: &[u8]) -> bool {
    let (start, end) = (data.as_ptr() as usize, data.as_ptr() as usize + data.len());
    let p = part.as_ptr() as usize;
    p >= start && p + part.len() <= end
}

fuzz_target!(|data: &[u8]| {
    if let Ok(parts) = parse(data) {
        for part in [
            parts.tbs,
            parts.signature_algorithm,
            parts.signature,
            parts.issuer,
            parts.subject,
        ] {
            assert!(inside(data, part));
        }
        assert!(inside(parts.tbs, parts.issuer) && inside(parts.tbs, parts.subject));
        // 0000-01-01 and 9999-12-31T23:59:59, in Unix seconds.
        for t in [parts.not_before, parts.not_after] {
            assert!((-62_167_219_200..=253_402_300_799).contains(&t), "{t}");
        }
        let _ = parts.is_self_issued();
        assert!(parse(&data[..data.len() - 1]).is_err());
    }
});
