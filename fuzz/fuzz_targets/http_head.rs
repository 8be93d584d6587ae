//! Response head parser on arbitrary bytes: no panic, ranges inside the input, and the same
//! answer whether the head arrives whole or in two pieces (re-parsed from the start).
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringperf_wire::http::{BodyKind, Status, parse_head};

fuzz_target!(|data: &[u8]| {
    let whole = parse_head(data);
    if let Ok(Status::Complete(head)) = &whole {
        assert!(head.head_len <= data.len());
        assert!(head.reason.0 <= head.reason.1 && head.reason.1 <= data.len());
        let _ = head.reason_str(data);
        let _ = BodyKind::from_head(head, false);
        // A prefix that ends before the blank line is never complete.
        if head.head_len > 0 {
            assert_eq!(parse_head(&data[..head.head_len - 1]), Ok(Status::Partial));
        }
    }
});
