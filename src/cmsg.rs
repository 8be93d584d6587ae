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
pub(crate) mod abi {
    pub(crate) const SO_TIMESTAMPING_OLD: libc::c_int = 37;
    pub(crate) const SO_TIMESTAMPING_NEW: libc::c_int = 65;
    pub(crate) const SUPPORTED: bool = true;
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
pub(crate) const HEADER_BYTES: usize = align(size_of::<usize>() + 2 * size_of::<libc::c_int>());

/// `CMSG_ALIGN`: control messages start at multiples of `size_t`.
pub(crate) const fn align(n: usize) -> usize {
    (n + size_of::<usize>() - 1) & !(size_of::<usize>() - 1)
}

/// The software receive stamp (`CLOCK_REALTIME` ns) in `control`, the control data `recvmsg`
/// returned; `None` when it holds none or is malformed.
#[must_use]
pub fn parse_control(control: &[u8]) -> Option<u64> {
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
