//! Reads what a medium holds from its own header, without decoding the pixels or samples: PNG
//! (IHDR), JPEG (the SOF marker), WAV (`fmt ` and `data` chunks), MP3 (frame headers), MP4 and
//! WebM (container recognised). The mock uses it for its truth log. Never panics: anything it
//! cannot read is `None`.

/// What a medium was found to hold.
#[derive(Clone, Debug, PartialEq)]
pub enum Probed {
    Image {
        format: &'static str,
        width: u32,
        height: u32,
    },
    Audio {
        format: &'static str,
        sample_rate: u32,
        channels: u16,
        /// Bits per sample (0 for MP3).
        depth: u16,
        seconds: f64,
    },
    Video {
        format: &'static str,
    },
}

/// Reads a medium's header.
pub fn probe(bytes: &[u8]) -> Option<Probed> {
    if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        return png(bytes);
    }
    if bytes.starts_with(&[0xFF, 0xD8]) {
        return jpeg(bytes);
    }
    if bytes.starts_with(b"RIFF") && bytes.get(8..12) == Some(b"WAVE") {
        return wav(bytes);
    }
    if bytes.get(4..8) == Some(b"ftyp") || bytes.get(4..8) == Some(b"moov") {
        return Some(Probed::Video { format: "mp4" });
    }
    if bytes.starts_with(&[0x1A, 0x45, 0xDF, 0xA3]) {
        return Some(Probed::Video { format: "webm" });
    }
    mp3(bytes)
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn le16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn png(b: &[u8]) -> Option<Probed> {
    if b.get(12..16)? != b"IHDR" {
        return None;
    }
    Some(Probed::Image {
        format: "png",
        width: be32(b, 16)?,
        height: be32(b, 20)?,
    })
}

fn jpeg(b: &[u8]) -> Option<Probed> {
    let mut i = 2;
    loop {
        // Fill bytes (0xFF repeated) may precede a marker.
        while *b.get(i)? == 0xFF && *b.get(i + 1)? == 0xFF {
            i += 1;
        }
        if *b.get(i)? != 0xFF {
            return None;
        }
        let marker = *b.get(i + 1)?;
        let len = usize::from(u16::from_be_bytes([*b.get(i + 2)?, *b.get(i + 3)?]));
        // SOF0..SOF15 except DHT (C4), JPG (C8) and DAC (CC).
        if (0xC0..=0xCF).contains(&marker) && !matches!(marker, 0xC4 | 0xC8 | 0xCC) {
            let height = u16::from_be_bytes([*b.get(i + 5)?, *b.get(i + 6)?]);
            let width = u16::from_be_bytes([*b.get(i + 7)?, *b.get(i + 8)?]);
            return Some(Probed::Image {
                format: "jpeg",
                width: u32::from(width),
                height: u32::from(height),
            });
        }
        if marker == 0xD9 || marker == 0xDA || len < 2 {
            return None;
        }
        i += 2 + len;
    }
}

fn wav(b: &[u8]) -> Option<Probed> {
    let mut i = 12;
    let mut fmt: Option<(u16, u32, u16, u16)> = None;
    while i + 8 <= b.len() {
        let id = b.get(i..i + 4)?;
        let len = le32(b, i + 4)? as usize;
        if id == b"fmt " {
            fmt = Some((
                le16(b, i + 10)?,
                le32(b, i + 12)?,
                le16(b, i + 20)?,
                le16(b, i + 22)?,
            ));
        } else if id == b"data" {
            let (channels, rate, block, depth) = fmt?;
            if rate == 0 || block == 0 {
                return None;
            }
            // A truncated body counts what is there.
            let data = len.min(b.len() - (i + 8));
            let frames = data / usize::from(block);
            return Some(Probed::Audio {
                format: "wav",
                sample_rate: rate,
                channels,
                depth,
                seconds: frames as f64 / f64::from(rate),
            });
        }
        i = i.checked_add(8)?.checked_add(len + (len & 1))?;
    }
    None
}

/// MPEG audio: sums the frames' samples. Skips an ID3v2 tag; needs at least two frames in a row
/// to call it MP3.
fn mp3(b: &[u8]) -> Option<Probed> {
    let mut i = 0;
    if b.starts_with(b"ID3") && b.len() >= 10 {
        let size = b[6..10]
            .iter()
            .fold(0usize, |acc, &x| (acc << 7) | usize::from(x & 0x7F));
        i = 10 + size;
    }
    let (mut frames, mut samples, mut rate, mut channels) = (0u64, 0u64, 0u32, 0u16);
    while let Some(h) = b.get(i..i + 4) {
        let Some((len, n, r, c)) = mp3_frame(h) else {
            break;
        };
        frames += 1;
        samples += u64::from(n);
        rate = r;
        channels = c;
        i += len;
    }
    if frames < 2 || rate == 0 {
        return None;
    }
    Some(Probed::Audio {
        format: "mp3",
        sample_rate: rate,
        channels,
        depth: 0,
        seconds: samples as f64 / f64::from(rate),
    })
}

/// One Layer III frame header: (frame length, samples, sample rate, channels).
fn mp3_frame(h: &[u8]) -> Option<(usize, u32, u32, u16)> {
    if h[0] != 0xFF || h[1] & 0xE0 != 0xE0 {
        return None;
    }
    let version = (h[1] >> 3) & 3; // 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5
    let layer = (h[1] >> 1) & 3; // 1: Layer III
    if version == 1 || layer != 1 {
        return None;
    }
    let bitrate_index = usize::from(h[2] >> 4);
    let rate_index = usize::from((h[2] >> 2) & 3);
    if bitrate_index == 0 || bitrate_index == 15 || rate_index == 3 {
        return None;
    }
    const V1: [u32; 15] = [
        0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320,
    ];
    const V2: [u32; 15] = [0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160];
    let (kbps, base, samples) = if version == 3 {
        (V1[bitrate_index], [44100, 48000, 32000][rate_index], 1152)
    } else {
        (V2[bitrate_index], [22050, 24000, 16000][rate_index], 576)
    };
    let rate = if version == 0 { base / 2 } else { base };
    let padding = u32::from((h[2] >> 1) & 1);
    let len = (samples / 8 * kbps * 1000 / rate + padding) as usize;
    let channels = if h[3] >> 6 == 3 { 1 } else { 2 };
    (len >= 4).then_some((len, samples, rate, channels))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_and_truncations_are_none_not_panics() {
        assert_eq!(probe(b""), None);
        assert_eq!(probe(b"hello world"), None);
        assert_eq!(probe(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0"), None);
        assert_eq!(probe(&[0xFF, 0xD8, 0xFF]), None);
        assert_eq!(probe(b"RIFF\0\0\0\0WAVEfmt \xff\xff\xff\xff"), None);
        assert_eq!(probe(&[0xFF, 0xFB, 0x90, 0x00]), None);
        // Every prefix of a real PNG and JPEG.
        let mut rngs = super::super::image::ImageRngs::new(Some(1));
        for format in [
            super::super::ImageFormat::Png,
            super::super::ImageFormat::Jpeg,
        ] {
            let spec = super::super::ImageSpec::fixed(5, 3, format);
            let img = super::super::generate_image(&spec, &mut rngs).unwrap();
            for n in 0..img.bytes.len() {
                let _ = probe(&img.bytes[..n]);
            }
        }
    }

    #[test]
    fn mp3_frames_are_counted() {
        // Two MPEG-1 Layer III frames, 128 kb/s, 44.1 kHz, stereo, no padding: 417 bytes each.
        let mut b = Vec::new();
        for _ in 0..2 {
            let mut frame = vec![0u8; 417];
            frame[..4].copy_from_slice(&[0xFF, 0xFB, 0x90, 0x00]);
            b.extend_from_slice(&frame);
        }
        let Some(Probed::Audio {
            format,
            sample_rate,
            channels,
            seconds,
            ..
        }) = probe(&b)
        else {
            panic!("{:?}", probe(&b))
        };
        assert_eq!((format, sample_rate, channels), ("mp3", 44100, 2));
        assert!((seconds - 2.0 * 1152.0 / 44100.0).abs() < 1e-12);
    }
}
