//! Control messages and the multishot receive's buffer layout, read from plain bytes with
//! bounds checks (no I/O, so the fuzz crate reaches them): the kernel's software receive stamp
//! in `recvmsg`'s control data ([`parse_control`]), and the `io_uring_recvmsg_out` layout a
//! multishot `IORING_OP_RECVMSG` writes into each provided buffer ([`parse_recvmsg_out`]). Odd,
//! short or absent data means "no stamp" or "no message", never a panic.

use std::mem::size_of;

/// `SOL_SOCKET` option numbers of the kernel's generic socket ABI (x86, Arm, RISC-V,
/// LoongArch): `SO_TIMESTAMPING` and its 64-bit-time twin. Other architectures number them
/// differently and get no kernel stamps here.
#[cfg(all(
    target_os = "linux",
    target_pointer_width = "64",
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64",
        target_arch = "loongarch64"
    )
))]
pub mod abi {
    pub const SO_TIMESTAMPING_OLD: libc::c_int = 37;
    pub const SO_TIMESTAMPING_NEW: libc::c_int = 65;
    pub const SUPPORTED: bool = true;
}

#[cfg(not(all(
    target_os = "linux",
    target_pointer_width = "64",
    any(
        target_arch = "x86_64",
        target_arch = "aarch64",
        target_arch = "riscv64",
        target_arch = "loongarch64"
    )
)))]
pub(crate) mod abi {
    pub(crate) const SO_TIMESTAMPING_OLD: libc::c_int = -1;
    pub(crate) const SO_TIMESTAMPING_NEW: libc::c_int = -1;
    pub(crate) const SUPPORTED: bool = false;
}

/// `cmsghdr`: `cmsg_len` (a `size_t`), `cmsg_level`, `cmsg_type` (two `int`s), padded to the
/// alignment of `size_t`; the data follows.
pub const HEADER_BYTES: usize = align(size_of::<usize>() + 2 * size_of::<libc::c_int>());

/// `CMSG_ALIGN`: control messages start at multiples of `size_t`.
pub const fn align(n: usize) -> usize {
    (n + size_of::<usize>() - 1) & !(size_of::<usize>() - 1)
}

/// The software receive stamp (`CLOCK_REALTIME` ns) in `control`, the control data `recvmsg`
/// returned; `None` when it holds none or is malformed.
#[must_use]
pub fn parse_control(control: &[u8]) -> Option<u64> {
    if !abi::SUPPORTED {
        return None;
    }
    let mut at = 0usize;
    while let Some(header) = control.get(at..at.checked_add(HEADER_BYTES)?) {
        let (len, rest) = header.split_at(size_of::<usize>());
        let len = usize::from_ne_bytes(len.try_into().ok()?);
        let level = libc::c_int::from_ne_bytes(rest.get(..4)?.try_into().ok()?);
        let kind = libc::c_int::from_ne_bytes(rest.get(4..8)?.try_into().ok()?);
        if len < HEADER_BYTES {
            return None;
        }
        let data = control.get(at + HEADER_BYTES..at.checked_add(len)?)?;
        if level == libc::SOL_SOCKET
            && (kind == abi::SO_TIMESTAMPING_OLD || kind == abi::SO_TIMESTAMPING_NEW)
        {
            // `scm_timestamping`: three timespecs; the first is the software stamp.
            return timespec_ns(data.get(..16)?);
        }
        at = at.checked_add(align(len))?;
    }
    None
}

/// A 64-bit `timespec` in nanoseconds; `None` for the all-zero "no stamp" or an invalid one.
fn timespec_ns(b: &[u8]) -> Option<u64> {
    let secs = i64::from_ne_bytes(b.get(..8)?.try_into().ok()?);
    let nanos = i64::from_ne_bytes(b.get(8..16)?.try_into().ok()?);
    if secs <= 0 || !(0..1_000_000_000).contains(&nanos) {
        return None;
    }
    u64::try_from(secs)
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(nanos as u64)
}

/// `io_uring_recvmsg_out`: four `u32`s (name length, control length, payload length, flags)
/// at the start of every buffer a multishot `recvmsg` fills.
pub const RECVMSG_OUT_BYTES: usize = 16;

/// One multishot `recvmsg` completion's buffer, taken apart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecvMsgOut<'a> {
    /// The control data the kernel wrote (at most the room the `msghdr` gave).
    pub control: &'a [u8],
    /// The payload bytes in this buffer.
    pub payload: &'a [u8],
    /// The kernel's `msg_flags` for this receive (`MSG_CTRUNC` when the control room was short).
    pub flags: u32,
}

/// Takes apart `buf`, the first `res` bytes of a provided buffer a multishot `recvmsg`
/// completed into: the header, then `name_room` bytes of name and `control_room` bytes of
/// control area (the `msghdr`'s `msg_namelen` and `msg_controllen` at submission, whatever the
/// kernel filled of them), then the payload up to the end. `None` when `buf` is shorter than
/// the header and both areas (a malformed completion).
#[must_use]
pub fn parse_recvmsg_out(
    buf: &[u8],
    name_room: usize,
    control_room: usize,
) -> Option<RecvMsgOut<'_>> {
    let field = |i: usize| -> Option<usize> {
        let b = buf.get(i * 4..i * 4 + 4)?;
        usize::try_from(u32::from_ne_bytes(b.try_into().ok()?)).ok()
    };
    let control_len = field(1)?;
    let flags = u32::try_from(field(3)?).ok()?;
    let control_at = RECVMSG_OUT_BYTES.checked_add(name_room)?;
    let payload_at = control_at.checked_add(control_room)?;
    let payload = buf.get(payload_at..)?;
    let control = buf.get(control_at..control_at + control_len.min(control_room))?;
    Some(RecvMsgOut {
        control,
        payload,
        flags,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The software-stamp control message as the kernel writes it (`scm_timestamping`: the
    /// software stamp, then two zero timespecs).
    fn stamp_message(secs: i64, nanos: i64) -> Vec<u8> {
        let mut m = Vec::new();
        m.extend_from_slice(&(HEADER_BYTES + 48).to_ne_bytes());
        m.extend_from_slice(&libc::SOL_SOCKET.to_ne_bytes());
        m.extend_from_slice(&abi::SO_TIMESTAMPING_OLD.to_ne_bytes());
        m.resize(HEADER_BYTES, 0);
        m.extend_from_slice(&secs.to_ne_bytes());
        m.extend_from_slice(&nanos.to_ne_bytes());
        m.resize(HEADER_BYTES + 48, 0);
        m
    }

    /// One provided buffer as a multishot `recvmsg` lays it out: header, `name_room` bytes of
    /// name, `control_room` bytes of control area holding `control`, then `payload`.
    fn buffer(name_room: usize, control_room: usize, control: &[u8], payload: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        for v in [0, control.len(), payload.len(), 0] {
            b.extend_from_slice(&(v as u32).to_ne_bytes());
        }
        b.resize(RECVMSG_OUT_BYTES + name_room, 0xAA);
        b.extend_from_slice(control);
        b.resize(RECVMSG_OUT_BYTES + name_room + control_room, 0);
        b.extend_from_slice(payload);
        b
    }

    #[test]
    fn a_buffer_is_taken_apart_by_the_rooms_it_was_armed_with() {
        let c = stamp_message(1_700_000_000, 42);
        let b = buffer(16, 128, &c, b"data: x\n\n");
        let out = parse_recvmsg_out(&b, 16, 128).unwrap();
        assert_eq!(out.payload, b"data: x\n\n");
        assert_eq!(out.control, &c[..]);
        if abi::SUPPORTED {
            assert_eq!(parse_control(out.control), Some(1_700_000_000_000_000_042));
        }
        // The payload starts after the whole control room, however little of it was used.
        let empty = buffer(0, 128, &[], b"abc");
        let out = parse_recvmsg_out(&empty, 0, 128).unwrap();
        assert_eq!((out.payload, out.control), (&b"abc"[..], &[][..]));
        // Shorter than the header and the rooms: malformed.
        assert_eq!(
            parse_recvmsg_out(&b[..RECVMSG_OUT_BYTES + 100], 16, 128),
            None
        );
        assert_eq!(parse_recvmsg_out(&b[..3], 0, 0), None);
        // A control length past the room is cut to the room.
        let mut long = buffer(0, 8, &[1; 8], b"p");
        long[4..8].copy_from_slice(&1000u32.to_ne_bytes());
        assert_eq!(parse_recvmsg_out(&long, 0, 8).unwrap().control, &[1; 8][..]);
    }

    proptest! {
        #[test]
        fn arbitrary_buffers_never_panic(
            bytes in proptest::collection::vec(any::<u8>(), 0..512),
            name in 0usize..64,
            control in 0usize..256,
        ) {
            if let Some(out) = parse_recvmsg_out(&bytes, name, control) {
                prop_assert!(out.payload.len() + RECVMSG_OUT_BYTES + name + control == bytes.len());
                let _ = parse_control(out.control);
            }
        }

        /// However a stream is split into receives, the buffers give back the same bytes, and
        /// each receive's stamp; a reader that folds several receives into one read keeps the
        /// newest stamp among them.
        #[test]
        fn any_split_gives_the_same_bytes_and_the_newest_stamp_per_read(
            stream in proptest::collection::vec(any::<u8>(), 1..2000),
            cuts in proptest::collection::vec(1usize..300, 1..40),
            base in 1i64..4_000_000_000,
            fold in 1usize..5,
        ) {
            prop_assume!(abi::SUPPORTED);
            let mut pieces = Vec::new();
            let mut at = 0;
            for (i, c) in cuts.iter().cycle().enumerate() {
                if at >= stream.len() { break; }
                let end = (at + c).min(stream.len());
                // Stamps rise with the receives, a few ns to a second apart.
                let ns = base as u64 * 1_000_000_000 + (i as u64 * 7_919 % 999_999_999);
                let control = stamp_message((ns / 1_000_000_000) as i64, (ns % 1_000_000_000) as i64);
                pieces.push((buffer(0, 128, &control, &stream[at..end]), ns));
                at = end;
            }
            let mut got = Vec::new();
            let mut stamps = Vec::new();
            for (b, ns) in &pieces {
                let out = parse_recvmsg_out(b, 0, 128).unwrap();
                got.extend_from_slice(out.payload);
                let stamp = parse_control(out.control);
                prop_assert_eq!(stamp, Some(*ns));
                stamps.push(stamp.unwrap());
            }
            prop_assert_eq!(&got, &stream);
            for (group, want) in stamps.chunks(fold).zip(pieces.chunks(fold)) {
                let newest = group.iter().copied().max();
                prop_assert_eq!(newest, want.iter().map(|p| p.1).max());
            }
        }
    }
}
