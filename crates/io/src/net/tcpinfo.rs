//! The kernel's own round-trip estimate of a connection (`TCP_INFO`): the smoothed RTT and
//! its mean deviation, in µs, which the stack keeps from the ACKs of everything sent on the
//! connection. Read once per response with network latency on (docs/metrics.md,
//! "Network-adjusted latencies"), beside AIPerf's connect probes.

use std::os::fd::RawFd;

/// A connection's RTT estimate, µs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rtt {
    /// Smoothed RTT (`tcpi_rtt`).
    pub rtt_us: u32,
    /// Its mean deviation (`tcpi_rttvar`).
    pub rttvar_us: u32,
}

/// Reads `fd`'s estimate; `None` when the socket gives none (not TCP, closed, or an estimate
/// of 0: nothing acknowledged yet).
#[must_use]
pub fn read(fd: RawFd) -> Option<Rtt> {
    // SAFETY: `info` is a live, writable `tcp_info` local and `len` holds its size; the kernel
    // writes at most `len` bytes into it and the new length into `len`; both outlive the
    // synchronous call. An all-zero `tcp_info` is a valid value of the plain-integer struct.
    let mut info: libc::tcp_info = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    // SAFETY: as above: pointers to the two live locals, the length the size of `info`.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&raw mut info).cast::<libc::c_void>(),
            &raw mut len,
        )
    };
    // The two fields lie within the first 72 bytes the kernel always fills.
    let filled = len as usize >= std::mem::offset_of!(libc::tcp_info, tcpi_rttvar) + 4;
    (rc == 0 && filled && info.tcpi_rtt > 0).then_some(Rtt {
        rtt_us: info.tcpi_rtt,
        rttvar_us: info.tcpi_rttvar,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::os::fd::AsRawFd;

    #[test]
    fn a_loopback_connection_that_exchanged_data_has_an_estimate() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (mut s, _) = l.accept().unwrap();
        c.write_all(b"ping").unwrap();
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).unwrap();
        s.write_all(b"pong").unwrap();
        c.read_exact(&mut buf).unwrap();
        let rtt = read(c.as_raw_fd()).expect("an estimate");
        // Loopback: well under a second.
        assert!(rtt.rtt_us > 0 && rtt.rtt_us < 1_000_000, "{rtt:?}");
        // A UDP socket is not TCP: no estimate, no panic; nor a closed descriptor.
        let u = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        assert_eq!(read(u.as_raw_fd()), None);
        assert_eq!(read(-1), None);
    }
}
