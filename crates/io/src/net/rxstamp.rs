//! Kernel receive stamps: the network stack stamps every segment it receives in software
//! (`SO_TIMESTAMPING` with `SOF_TIMESTAMPING_RX_SOFTWARE`), before any thread wakes, and hands
//! the stamp to `recvmsg` as a control message. A read's kernel stamp is the newest stamp among
//! the segments it returned (TCP gives the stamp of the last one it copied), so it is never
//! later than the moment the read returned.
//!
//! monoio 0.2.4 has no receive with control messages, and its driver's ops are private, so a
//! stamped read is a readiness wait on the runtime (an io_uring `PollAdd`, or the epoll
//! driver's readiness) followed by a non-blocking `recvmsg` here: the same on both drivers.
//!
//! The stamp is `CLOCK_REALTIME`; [`ringperf_wire::clock::Clock::from_realtime_ns`] converts it. The
//! control-message parser ([`parse_control`]) reads plain bytes with bounds checks: odd, short or
//! absent control data means "no kernel stamp" for that read, never a panic.

use std::io;
use std::mem::size_of;
use std::os::fd::RawFd;

use ringperf_wire::cmsg::abi;
pub use ringperf_wire::cmsg::parse_control;
#[cfg(test)]
use ringperf_wire::cmsg::{HEADER_BYTES, align};

/// The stamps of one read, monotonic ns of the run's clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadStamp {
    /// Taken in user space as the read returned.
    pub user_ns: u64,
    /// The kernel's receive stamp of the newest segment the read returned (`None`: kernel
    /// stamps are off, or this read came without one).
    pub kernel_ns: Option<u64>,
}

impl ReadStamp {
    /// A read with only a user-space stamp.
    #[must_use]
    pub fn user(user_ns: u64) -> Self {
        Self {
            user_ns,
            kernel_ns: None,
        }
    }

    /// The stamps of a read that just returned: the user-space one taken now, the kernel's
    /// `realtime_ns` (if the read carried one) converted to `clock`.
    #[must_use]
    pub fn now(clock: &ringperf_wire::clock::Clock, realtime_ns: Option<u64>) -> Self {
        Self {
            user_ns: clock.now_ns(),
            kernel_ns: realtime_ns.and_then(|r| clock.from_realtime_ns(r)),
        }
    }

    /// The read's timestamp: the kernel's when present (never later than the user-space one),
    /// the user-space one otherwise.
    #[must_use]
    pub fn best_ns(self) -> u64 {
        self.kernel_ns.map_or(self.user_ns, |k| k.min(self.user_ns))
    }

    /// The client's receive lag: how long after the kernel received the data the read
    /// returned it (`None` without a kernel stamp).
    #[must_use]
    pub fn lag_ns(self) -> Option<u64> {
        self.kernel_ns.map(|k| self.user_ns.saturating_sub(k))
    }
}

/// Software receive stamps, reported to this socket.
const SOF_TIMESTAMPING_RX_SOFTWARE: libc::c_uint = 1 << 3;
const SOF_TIMESTAMPING_SOFTWARE: libc::c_uint = 1 << 4;

/// Room for the control data of one read: a header and three timespecs (`scm_timestamping`),
/// with spare room should the kernel add another message.
pub(super) const CONTROL_BYTES: usize = 128;

/// Asks the kernel to stamp every segment `fd` receives and report the stamps with `recvmsg`.
///
/// # Errors
/// The socket option is refused (an old kernel, a socket type without stamps) or this
/// architecture's option numbers are not known here.
pub fn enable(fd: RawFd) -> io::Result<()> {
    if !abi::SUPPORTED {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "SO_TIMESTAMPING numbers unknown on this architecture",
        ));
    }
    let flags = SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE;
    // SAFETY: `flags` lives across the call and the length given is its size; setsockopt only
    // reads that many bytes and touches nothing else of ours.
    let rc = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            abi::SO_TIMESTAMPING_OLD,
            (&raw const flags).cast(),
            size_of::<libc::c_uint>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Testing hook: `RINGPERF_TEST_NO_KERNEL_STAMPS=1` makes [`probe`] fail as on a kernel without
/// software receive stamps, so the fallback to user-space stamps can be tested on any machine.
/// Compiled only with the `test-hooks` feature (test builds), not into a release binary.
#[cfg(feature = "test-hooks")]
pub const TEST_NO_KERNEL_STAMPS_ENV: &str = "RINGPERF_TEST_NO_KERNEL_STAMPS";

/// Whether this machine gives kernel receive stamps: enables them on a fresh TCP socket, and
/// returns that socket. The kernel switches its receive stamping on in deferred work when the
/// first socket asks and off when the last one closes, so a run holds the returned socket until
/// its end: stamping is on well before its first connection and stays on between connections.
///
/// # Errors
/// Why not (the socket option was refused, or a socket could not be made to ask).
pub fn probe() -> io::Result<std::net::TcpListener> {
    #[cfg(feature = "test-hooks")]
    if std::env::var_os(TEST_NO_KERNEL_STAMPS_ENV).is_some_and(|v| v == "1") {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{TEST_NO_KERNEL_STAMPS_ENV}=1"),
        ));
    }
    let socket = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, 0))?;
    enable(std::os::fd::AsRawFd::as_raw_fd(&socket))?;
    Ok(socket)
}

/// Control-data buffer, aligned for `cmsghdr`.
#[repr(C, align(8))]
struct Control([u8; CONTROL_BYTES]);

/// One non-blocking `recvmsg` on `fd` into `buf`'s spare capacity (appending). Returns the
/// bytes read (0: end of stream) and the kernel's receive stamp (`CLOCK_REALTIME` ns) if the
/// read came with one.
///
/// # Errors
/// The socket's error; `WouldBlock` when nothing is waiting.
pub fn recv(fd: RawFd, buf: &mut Vec<u8>) -> io::Result<(usize, Option<u64>)> {
    recv_at_most(fd, buf, usize::MAX)
}

/// [`recv`], reading at most `max` bytes (and at most `buf`'s spare capacity).
///
/// # Errors
/// The socket's error; `WouldBlock` when nothing is waiting.
pub fn recv_at_most(fd: RawFd, buf: &mut Vec<u8>, max: usize) -> io::Result<(usize, Option<u64>)> {
    let spare = buf.spare_capacity_mut();
    let len = spare.len().min(max);
    let spare = &mut spare[..len];
    let mut iov = libc::iovec {
        iov_base: spare.as_mut_ptr().cast(),
        iov_len: spare.len(),
    };
    let mut control = Control([0; CONTROL_BYTES]);
    // SAFETY: an all-zero msghdr is valid (null name, no iovecs, no control); the fields that
    // matter are set below.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &raw mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = CONTROL_BYTES as _;
    // SAFETY: `msg` points at one iovec covering (a prefix of) `buf`'s spare capacity (writable, unaliased
    // while we hold `&mut buf`) and at `control` (CONTROL_BYTES writable bytes); all of them
    // outlive this synchronous call, which writes only within those bounds.
    let n = unsafe { libc::recvmsg(fd, &raw mut msg, libc::MSG_DONTWAIT) };
    let Ok(n) = usize::try_from(n) else {
        return Err(io::Error::last_os_error());
    };
    let n = n.min(spare.len());
    // SAFETY: the kernel wrote `n` bytes (at most the iovec's length, within the spare capacity) after the initialized
    // `buf.len()` bytes.
    unsafe { buf.set_len(buf.len() + n) };
    let control_len = (msg.msg_controllen as usize).min(CONTROL_BYTES);
    Ok((n, parse_control(&control.0[..control_len])))
}

/// A non-blocking read found nothing yet (a stale readiness) or was interrupted: wait again.
pub fn is_not_ready(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
    )
}

/// One read of `tcp` with its kernel receive stamp: waits until the socket is readable (on the
/// runtime: an io_uring poll or the epoll driver's readiness), then reads with a non-blocking
/// [`recv`], appending to `buf`. Returns the bytes read (0: end of stream) and the kernel's
/// receive stamp (`CLOCK_REALTIME` ns) if the read came with one.
///
/// # Errors
/// The socket's error.
pub async fn read(
    tcp: &monoio::net::TcpStream,
    buf: &mut Vec<u8>,
) -> io::Result<(usize, Option<u64>)> {
    loop {
        // Not relaxed: on the epoll driver a stale readiness is checked with poll(2) first, so a
        // read that would block clears it rather than spinning.
        tcp.readable(false).await?;
        match recv(std::os::fd::AsRawFd::as_raw_fd(tcp), buf) {
            Ok(r) => return Ok(r),
            Err(e) if is_not_ready(&e) => {}
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A control message as the kernel lays it out.
    fn cmsg(level: libc::c_int, kind: libc::c_int, data: &[u8]) -> Vec<u8> {
        let len = HEADER_BYTES + data.len();
        let mut out = Vec::new();
        out.extend_from_slice(&len.to_ne_bytes());
        out.extend_from_slice(&level.to_ne_bytes());
        out.extend_from_slice(&kind.to_ne_bytes());
        out.resize(HEADER_BYTES, 0);
        out.extend_from_slice(data);
        out.resize(align(out.len()), 0);
        out
    }

    fn timestamping(sw: (i64, i64)) -> Vec<u8> {
        let mut d = Vec::new();
        for (s, ns) in [sw, (0, 0), (0, 0)] {
            d.extend_from_slice(&s.to_ne_bytes());
            d.extend_from_slice(&ns.to_ne_bytes());
        }
        d
    }

    #[test]
    fn a_well_formed_stamp_is_read() {
        if !abi::SUPPORTED {
            return;
        }
        let c = cmsg(
            libc::SOL_SOCKET,
            abi::SO_TIMESTAMPING_OLD,
            &timestamping((1_700_000_000, 5)),
        );
        assert_eq!(parse_control(&c), Some(1_700_000_000_000_000_005));
        let c = cmsg(
            libc::SOL_SOCKET,
            abi::SO_TIMESTAMPING_NEW,
            &timestamping((2, 999_999_999)),
        );
        assert_eq!(parse_control(&c), Some(2_999_999_999));
        // After another message.
        let mut two = cmsg(libc::IPPROTO_IP, 1, &[1, 2, 3]);
        two.extend(cmsg(
            libc::SOL_SOCKET,
            abi::SO_TIMESTAMPING_OLD,
            &timestamping((3, 0)),
        ));
        assert_eq!(parse_control(&two), Some(3_000_000_000));
    }

    #[test]
    fn absent_odd_or_empty_stamps_are_none() {
        assert_eq!(parse_control(&[]), None);
        assert_eq!(
            parse_control(&cmsg(libc::IPPROTO_IP, 1, &[1, 2, 3, 4])),
            None
        );
        let zero = cmsg(
            libc::SOL_SOCKET,
            abi::SO_TIMESTAMPING_OLD,
            &timestamping((0, 0)),
        );
        assert_eq!(parse_control(&zero), None);
        let bad_nanos = cmsg(
            libc::SOL_SOCKET,
            abi::SO_TIMESTAMPING_OLD,
            &timestamping((5, -1)),
        );
        assert_eq!(parse_control(&bad_nanos), None);
        // Truncated: the data is shorter than a timespec, or the length runs past the buffer.
        let short = cmsg(libc::SOL_SOCKET, abi::SO_TIMESTAMPING_OLD, &[0; 8]);
        assert_eq!(parse_control(&short), None);
        let full = cmsg(
            libc::SOL_SOCKET,
            abi::SO_TIMESTAMPING_OLD,
            &timestamping((9, 9)),
        );
        assert_eq!(parse_control(&full[..full.len() - 40]), None);
        // A length smaller than the header ends the walk rather than looping.
        let mut tiny = cmsg(
            libc::SOL_SOCKET,
            abi::SO_TIMESTAMPING_OLD,
            &timestamping((9, 9)),
        );
        tiny[..size_of::<usize>()].copy_from_slice(&3usize.to_ne_bytes());
        assert_eq!(parse_control(&tiny), None);
    }

    proptest! {
        #[test]
        fn arbitrary_control_data_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
            let _ = parse_control(&bytes);
        }

        #[test]
        fn any_valid_stamp_round_trips(secs in 1i64..4_000_000_000, nanos in 0i64..1_000_000_000) {
            prop_assume!(abi::SUPPORTED);
            let c = cmsg(libc::SOL_SOCKET, abi::SO_TIMESTAMPING_OLD, &timestamping((secs, nanos)));
            prop_assert_eq!(parse_control(&c), Some(secs as u64 * 1_000_000_000 + nanos as u64));
        }
    }

    /// A stamped loopback pair: `(sender, receiver)`.
    fn stamped_pair() -> (std::net::TcpStream, std::net::TcpStream) {
        use std::os::fd::AsRawFd;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let tx = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (rx, _) = listener.accept().unwrap();
        tx.set_nodelay(true).unwrap();
        enable(rx.as_raw_fd()).unwrap();
        (tx, rx)
    }

    /// Sends `msg` and reads it back whole: the stamps of the reads that brought it, with
    /// realtime readings taken before the write and after the last read.
    fn round(
        tx: &mut std::net::TcpStream,
        rx: &std::net::TcpStream,
        msg: &[u8],
    ) -> (u64, Vec<Option<u64>>, u64) {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let mut buf = Vec::with_capacity(msg.len());
        let mut stamps = Vec::new();
        let before = ringperf_wire::clock::wall_now_ns();
        tx.write_all(msg).unwrap();
        while buf.len() < msg.len() {
            match recv(rx.as_raw_fd(), &mut buf) {
                Ok((_, stamp)) => stamps.push(stamp),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                Err(e) => panic!("{e}"),
            }
        }
        let after = ringperf_wire::clock::wall_now_ns();
        assert_eq!(buf, msg);
        (before, stamps, after)
    }

    /// Switches the kernel's receive stamping on and waits until it is (it is switched on in
    /// deferred work); the returned sockets keep it on while they live.
    pub(crate) fn stamping_on() -> Option<impl Sized> {
        let guard = probe().ok()?;
        let (mut tx, rx) = stamped_pair();
        for _ in 0..10_000 {
            if round(&mut tx, &rx, b"x").1.iter().any(Option::is_some) {
                return Some((guard, tx, rx));
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        panic!("the kernel enabled stamps on a socket but never delivered one");
    }

    #[test]
    fn loopback_reads_carry_a_kernel_stamp() {
        use std::os::fd::AsRawFd;
        let Some(_on) = stamping_on() else {
            return; // No kernel stamps on this machine: the run falls back, nothing to check.
        };
        let (mut tx, rx) = stamped_pair();
        let mut buf = Vec::with_capacity(8);
        // Nothing sent yet: a non-blocking read would block.
        let e = recv(rx.as_raw_fd(), &mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        for _ in 0..20 {
            let (before, stamps, after) = round(&mut tx, &rx, b"hello");
            for s in stamps {
                // Realtime, as SystemTime reads it: after the write began, before the read ended.
                let s = s.expect("every read carries a stamp once stamping is on");
                assert!(before <= s && s <= after, "{before} {s} {after}");
            }
        }
    }
}
