//! The multishot receive's buffer layout on arbitrary bytes and rooms: no panic, the payload
//! and control inside the buffer, the payload exactly what follows both rooms, and the stamp
//! parser on whatever control data comes out.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringperf_wire::cmsg::{RECVMSG_OUT_BYTES, parse_control, parse_recvmsg_out};

fuzz_target!(|data: &[u8]| {
    let (rooms, buf) = data.split_at(data.len().min(2));
    let name = usize::from(rooms.first().copied().unwrap_or(0));
    let control = usize::from(rooms.get(1).copied().unwrap_or(0));
    if let Some(out) = parse_recvmsg_out(buf, name, control) {
        assert_eq!(
            RECVMSG_OUT_BYTES + name + control + out.payload.len(),
            buf.len()
        );
        assert!(out.control.len() <= control);
        let _ = parse_control(out.control);
    } else {
        assert!(buf.len() < RECVMSG_OUT_BYTES + name + control);
    }
});
