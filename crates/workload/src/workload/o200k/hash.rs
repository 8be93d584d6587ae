//! The hash that places a token's bytes in the o200k rank table. One definition, read by the
//! crate (`workload::o200k`, to look a byte string up) and by the crate's build script (to lay
//! the table out), so the two cannot disagree.

/// Slots in the rank table: a power of two, about 2.6 times o200k_base's 199,998 tokens, so
/// that a lookup that misses (most pair lookups of a byte-pair merge do) ends after a couple of
/// probes.
pub const SLOTS: usize = 1 << 19;

/// Bits of a slot that hold `id + 1` (0: an empty slot); the bits above them hold a tag from
/// the hash, so that a probe rarely compares bytes with a token it is not.
pub const ID_BITS: u32 = 18;

/// The 64-bit hash of `bytes`: eight bytes at a time, multiplied and rotated, then mixed once
/// more so that the low bits (the slot) and the high bits (the tag) both depend on every byte.
#[inline]
pub fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (bytes.len() as u64).wrapping_mul(K);
    let mut words = bytes.chunks_exact(8);
    for w in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(w);
        h = (h.rotate_left(23) ^ u64::from_le_bytes(word)).wrapping_mul(K);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        h = (h.rotate_left(23) ^ u64::from_le_bytes(word)).wrapping_mul(K);
    }
    // The finalizer of MurmurHash3's 64-bit variant.
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

/// The tag a slot keeps beside its id: the hash's top bits that the id leaves room for.
#[inline]
pub fn tag(h: u64) -> u32 {
    (h >> (64 - (32 - ID_BITS))) as u32
}
