//! Just enough X.509 (DER) to check a self-signed certificate that is its own trust anchor: what
//! its signature covers, the signature and its algorithm, issuer and subject, and the validity
//! window. webpki checks every other certificate; it refuses a `CA:TRUE` certificate presented
//! as a server's own even when the user trusts exactly that certificate, which is what
//! `openssl req -x509` makes by default (docs/tls.md). `crates/io/src/net/trust.rs` uses this reader for
//! that one case.
//!
//! The reader takes any bytes and never panics: every length is checked against what is left,
//! and anything it does not understand is an [`X509Error`]. It reads only the fields above, in
//! their fixed places (RFC 5280 §4.1); it checks no extension.

/// Why a certificate could not be read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum X509Error {
    /// A DER element is cut short, has a length it does not fit, or is not the expected one.
    Der(&'static str),
    /// A validity time is not a well-formed `UTCTime` / `GeneralizedTime` in UTC.
    Time,
}

impl std::fmt::Display for X509Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            X509Error::Der(what) => write!(f, "malformed certificate: {what}"),
            X509Error::Time => f.write_str("malformed certificate: bad validity time"),
        }
    }
}

impl std::error::Error for X509Error {}

/// The parts of a certificate a self-signature check needs, borrowed from its DER.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CertParts<'a> {
    /// The whole `TBSCertificate` element (tag and length included): what the signature covers.
    pub tbs: &'a [u8],
    /// The content of the outer `signatureAlgorithm` (the `AlgorithmIdentifier` without its
    /// `SEQUENCE` tag and length, as rustls-pki-types spells algorithm identifiers).
    pub signature_algorithm: &'a [u8],
    /// The signature bits.
    pub signature: &'a [u8],
    /// The issuer `Name` element.
    pub issuer: &'a [u8],
    /// The subject `Name` element.
    pub subject: &'a [u8],
    /// `notBefore`, seconds since the Unix epoch (negative before 1970).
    pub not_before: i64,
    /// `notAfter`, seconds since the Unix epoch.
    pub not_after: i64,
}

impl CertParts<'_> {
    /// Issuer and subject are the same name, byte for byte (a self-issued certificate).
    #[must_use]
    pub fn is_self_issued(&self) -> bool {
        self.issuer == self.subject
    }
}

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const BIT_STRING: u8 = 0x03;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;
/// `[0] EXPLICIT Version`.
const VERSION: u8 = 0xa0;

/// One DER element at the front of `input`: `(tag, content, rest)`.
fn element(input: &[u8]) -> Result<(u8, &[u8], &[u8]), X509Error> {
    let (&tag, after_tag) = input.split_first().ok_or(X509Error::Der("truncated"))?;
    if tag & 0x1f == 0x1f {
        return Err(X509Error::Der("multi-byte tag"));
    }
    let (&first, mut after_len) = after_tag.split_first().ok_or(X509Error::Der("truncated"))?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 {
            return Err(X509Error::Der("unsupported length"));
        }
        let bytes = after_len.get(..n).ok_or(X509Error::Der("truncated"))?;
        after_len = &after_len[n..];
        bytes
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b))
    };
    if len > after_len.len() {
        return Err(X509Error::Der("length past the end"));
    }
    let (content, rest) = after_len.split_at(len);
    Ok((tag, content, rest))
}

/// The element at the front of `input`, which must have `tag`: `(content, rest)`.
fn expect<'a>(
    input: &'a [u8],
    tag: u8,
    what: &'static str,
) -> Result<(&'a [u8], &'a [u8]), X509Error> {
    let (t, content, rest) = element(input)?;
    if t != tag {
        return Err(X509Error::Der(what));
    }
    Ok((content, rest))
}

/// The whole element (tag and length included) at the front of `input`, and what follows it.
fn whole<'a>(
    input: &'a [u8],
    tag: u8,
    what: &'static str,
) -> Result<(&'a [u8], &'a [u8]), X509Error> {
    let (_, rest) = expect(input, tag, what)?;
    Ok((&input[..input.len() - rest.len()], rest))
}

/// Reads the parts of the certificate `der` (one DER `Certificate`, nothing after it).
///
/// # Errors
/// The bytes are not a certificate this reader understands.
pub fn parse(der: &[u8]) -> Result<CertParts<'_>, X509Error> {
    let (cert, trailing) = expect(der, SEQUENCE, "not a certificate")?;
    if !trailing.is_empty() {
        return Err(X509Error::Der("data after the certificate"));
    }
    let (tbs, rest) = whole(cert, SEQUENCE, "no TBSCertificate")?;
    let (signature_algorithm, rest) = expect(rest, SEQUENCE, "no signature algorithm")?;
    let (bits, rest) = expect(rest, BIT_STRING, "no signature")?;
    if !rest.is_empty() {
        return Err(X509Error::Der("data after the signature"));
    }
    let signature = match bits.split_first() {
        Some((0, signature)) => signature,
        _ => return Err(X509Error::Der("signature is not whole bytes")),
    };

    let (mut fields, _) = expect(tbs, SEQUENCE, "no TBSCertificate")?;
    if fields.first() == Some(&VERSION) {
        fields = expect(fields, VERSION, "version")?.1;
    }
    let (_serial, fields) = expect(fields, INTEGER, "no serial number")?;
    let (_algorithm, fields) = expect(fields, SEQUENCE, "no TBS signature algorithm")?;
    let (issuer, fields) = whole(fields, SEQUENCE, "no issuer")?;
    let (validity, fields) = expect(fields, SEQUENCE, "no validity")?;
    let (subject, _) = whole(fields, SEQUENCE, "no subject")?;
    let (not_before, validity) = time(validity)?;
    let (not_after, validity) = time(validity)?;
    if !validity.is_empty() {
        return Err(X509Error::Der("data after notAfter"));
    }
    Ok(CertParts {
        tbs,
        signature_algorithm,
        signature,
        issuer,
        subject,
        not_before,
        not_after,
    })
}

/// A `Time` at the front of `input`, as Unix seconds, and what follows it.
fn time(input: &[u8]) -> Result<(i64, &[u8]), X509Error> {
    let (tag, text, rest) = element(input)?;
    let (year, text) = match (tag, text.len()) {
        // YYMMDDHHMMSSZ; RFC 5280: YY below 50 is 20YY, otherwise 19YY.
        (UTC_TIME, 13) => {
            let yy = i64::from(two_digits(text, 0)?);
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, &text[2..])
        }
        // YYYYMMDDHHMMSSZ
        (GENERALIZED_TIME, 15) => (
            i64::from(two_digits(text, 0)?) * 100 + i64::from(two_digits(text, 2)?),
            &text[4..],
        ),
        _ => return Err(X509Error::Time),
    };
    if text.get(10) != Some(&b'Z') {
        return Err(X509Error::Time);
    }
    let month = two_digits(text, 0)?;
    let day = two_digits(text, 2)?;
    let (hour, minute, second) = (
        two_digits(text, 4)?,
        two_digits(text, 6)?,
        two_digits(text, 8)?,
    );
    if !(1..=12).contains(&month)
        || day == 0
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return Err(X509Error::Time);
    }
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + i64::from(hour) * 3_600 + i64::from(minute) * 60 + i64::from(second);
    Ok((secs, rest))
}

/// The two ASCII digits at `text[at..at + 2]`.
fn two_digits(text: &[u8], at: usize) -> Result<u32, X509Error> {
    match text.get(at..at + 2) {
        Some(&[a, b]) if a.is_ascii_digit() && b.is_ascii_digit() => {
            Ok(u32::from(a - b'0') * 10 + u32::from(b - b'0'))
        }
        _ => Err(X509Error::Time),
    }
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to the given date of the proleptic Gregorian calendar (Howard Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `Time` element of `tag` holding `text`.
    fn time_of(tag: u8, text: &str) -> Result<i64, X509Error> {
        let mut der = vec![tag, u8::try_from(text.len()).unwrap()];
        der.extend_from_slice(text.as_bytes());
        time(&der).map(|(t, rest)| {
            assert!(rest.is_empty());
            t
        })
    }

    #[test]
    fn times_are_unix_seconds() {
        // Reference values: `date -u -d '…' +%s`.
        assert_eq!(time_of(UTC_TIME, "700101000000Z"), Ok(0));
        assert_eq!(time_of(UTC_TIME, "491231235959Z"), Ok(2_524_607_999));
        assert_eq!(time_of(UTC_TIME, "500101000000Z"), Ok(-631_152_000));
        assert_eq!(time_of(UTC_TIME, "000229120000Z"), Ok(951_825_600));
        assert_eq!(
            time_of(GENERALIZED_TIME, "20380119031408Z"),
            Ok(2_147_483_648)
        );
        assert_eq!(
            time_of(GENERALIZED_TIME, "99991231235959Z"),
            Ok(253_402_300_799)
        );
        for bad in [
            "700101000000",   // no Z, and too short
            "700101000000+",  // not UTC
            "701301000000Z",  // month 13
            "700230000000Z",  // 30 February
            "010229000000Z",  // 29 February of a common year
            "700101240000Z",  // hour 24
            "70010100000aZ",  // not a digit
            "7001010000000Z", // too long for UTCTime
        ] {
            assert_eq!(time_of(UTC_TIME, bad), Err(X509Error::Time), "{bad}");
        }
        assert_eq!(
            time_of(GENERALIZED_TIME, "700101000000Z"),
            Err(X509Error::Time)
        );
        assert_eq!(time_of(0x04, "700101000000Z"), Err(X509Error::Time));
    }

    /// A certificate made by rcgen (a DER writer that is not this reader) with known fields.
    fn rcgen_cert(not_before: (i32, u8, u8), not_after: (i32, u8, u8)) -> Vec<u8> {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "x509 reader test");
        params.not_before = rcgen::date_time_ymd(not_before.0, not_before.1, not_before.2);
        params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
        let cert = params.self_signed(&key).unwrap();
        cert.der().to_vec()
    }

    #[test]
    fn reads_what_rcgen_wrote() {
        // 1975-06-01 is UTCTime, 2071-03-04 GeneralizedTime (RFC 5280: from 2050 on).
        let der = rcgen_cert((1975, 6, 1), (2071, 3, 4));
        let parts = parse(&der).unwrap();
        assert_eq!(parts.not_before, 170_812_800);
        assert_eq!(parts.not_after, 3_192_652_800);
        assert!(parts.is_self_issued());
        // rcgen signs with ECDSA P-256 / SHA-256: the identifier is ecdsa-with-SHA256 alone.
        assert_eq!(
            parts.signature_algorithm,
            [0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x04, 0x03, 0x02]
        );
        // The TBSCertificate starts the certificate's content, and the signature ends it.
        assert_eq!(&der[4..4 + parts.tbs.len()], parts.tbs);
        assert!(der.ends_with(parts.signature));
        // The subject is a Name holding the common name.
        assert!(parts.subject.windows(16).any(|w| w == b"x509 reader test"));
    }

    #[test]
    fn every_cut_or_extended_certificate_is_an_error() {
        let der = rcgen_cert((2020, 1, 1), (2030, 1, 1));
        assert!(parse(&der).is_ok());
        for n in 0..der.len() {
            assert!(parse(&der[..n]).is_err(), "cut at {n}");
        }
        let mut longer = der.clone();
        longer.push(0);
        assert_eq!(
            parse(&longer),
            Err(X509Error::Der("data after the certificate"))
        );
        // Every single-byte change is read or refused, never a panic.
        for i in 0..der.len() {
            for flip in [0x01, 0x80, 0xff] {
                let mut bent = der.clone();
                bent[i] ^= flip;
                let _ = parse(&bent);
            }
        }
    }

    #[test]
    fn lengths_past_the_end_are_refused() {
        assert_eq!(
            element(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]),
            Err(X509Error::Der("length past the end"))
        );
        assert_eq!(
            element(&[0x30, 0x85, 0, 0, 0, 0, 1]),
            Err(X509Error::Der("unsupported length"))
        );
        assert_eq!(
            element(&[0x1f, 0x01, 0x00]),
            Err(X509Error::Der("multi-byte tag"))
        );
        assert_eq!(
            element(&[0x30, 0x03, 1, 2, 3, 4]),
            Ok((0x30, &[1u8, 2, 3][..], &[4u8][..]))
        );
    }
}
