//! NumPy's `default_rng(seed)` stream, draw for draw: the seed expanded by `SeedSequence`, the
//! PCG64 (XSL-RR 128/64) bit generator with its buffered 32-bit half, and the few `Generator`
//! methods the agentic-code synthesizer calls (`random`, `standard_normal` / `lognormal`,
//! `bytes`, `integers`, `choice` with weights), each consuming the words NumPy's does, so a seed
//! gives the sessions AIPerf gives. Checked against NumPy 2.4 (tests below).

use super::ziggurat::{FI, KI, WI};

const PCG_MULT: u128 = 0x2360_ED05_1FC6_5DA4_4385_DF64_9FCC_F645;

/// The ziggurat's base-strip edge and its inverse.
const NOR_R: f64 = 3.654_152_885_361_009;
const NOR_INV_R: f64 = 0.273_661_237_329_758_3;

/// NumPy's `SeedSequence(seed).generate_state(words)` for a non-negative integer seed.
fn seed_sequence(seed: u64, words: usize) -> Vec<u32> {
    const INIT_A: u32 = 0x43b0_d7e5;
    const MULT_A: u32 = 0x931e_8875;
    const INIT_B: u32 = 0x8b51_f9dd;
    const MULT_B: u32 = 0x58f3_8ded;
    const MIX_L: u32 = 0xca01_f9dd;
    const MIX_R: u32 = 0x4973_f715;
    // The seed as little-endian 32-bit words (0 is one zero word).
    let mut entropy = vec![seed as u32];
    if seed >> 32 != 0 {
        entropy.push((seed >> 32) as u32);
    }
    let mut hash_const = INIT_A;
    let mut hashmix = |value: u32| -> u32 {
        let mut v = value ^ hash_const;
        hash_const = hash_const.wrapping_mul(MULT_A);
        v = v.wrapping_mul(hash_const);
        v ^ (v >> 16)
    };
    let mix = |x: u32, y: u32| -> u32 {
        let r = MIX_L.wrapping_mul(x).wrapping_sub(MIX_R.wrapping_mul(y));
        r ^ (r >> 16)
    };
    let mut pool = [0u32; 4];
    for (i, slot) in pool.iter_mut().enumerate() {
        *slot = hashmix(entropy.get(i).copied().unwrap_or(0));
    }
    for src in 0..4 {
        for dst in 0..4 {
            if src != dst {
                let h = hashmix(pool[src]);
                pool[dst] = mix(pool[dst], h);
            }
        }
    }
    // (Entropy beyond the pool's four words never occurs for a 64-bit seed.)
    let mut hash_b = INIT_B;
    (0..words)
        .map(|i| {
            let mut v = pool[i % 4] ^ hash_b;
            hash_b = hash_b.wrapping_mul(MULT_B);
            v = v.wrapping_mul(hash_b);
            v ^ (v >> 16)
        })
        .collect()
}

/// NumPy's `Generator(PCG64(seed))`.
#[derive(Debug, Clone)]
pub struct NpRng {
    state: u128,
    inc: u128,
    /// The high half of the last 64-bit word, when a 32-bit draw left it.
    half: Option<u32>,
}

impl NpRng {
    /// `numpy.random.default_rng(seed)`.
    pub fn new(seed: u64) -> Self {
        let w = seed_sequence(seed, 8);
        let word = |k: usize| u64::from(w[2 * k]) | (u64::from(w[2 * k + 1]) << 32);
        let init_state = (u128::from(word(0)) << 64) | u128::from(word(1));
        let init_seq = (u128::from(word(2)) << 64) | u128::from(word(3));
        let mut rng = Self {
            state: 0,
            inc: (init_seq << 1) | 1,
            half: None,
        };
        rng.step();
        rng.state = rng.state.wrapping_add(init_state);
        rng.step();
        rng
    }

    fn step(&mut self) {
        self.state = self.state.wrapping_mul(PCG_MULT).wrapping_add(self.inc);
    }

    /// The next 64-bit word (`random_raw`).
    pub fn next_u64(&mut self) -> u64 {
        self.step();
        let s = self.state;
        let xored = ((s >> 64) as u64) ^ (s as u64);
        xored.rotate_right((s >> 122) as u32)
    }

    /// The next 32-bit word: the low half of a fresh word, then its high half.
    pub fn next_u32(&mut self) -> u32 {
        if let Some(h) = self.half.take() {
            return h;
        }
        let w = self.next_u64();
        self.half = Some((w >> 32) as u32);
        w as u32
    }

    /// `Generator.random()`: a double in [0, 1).
    pub fn random(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `Generator.standard_normal()`: NumPy's 256-layer ziggurat.
    pub fn standard_normal(&mut self) -> f64 {
        loop {
            let mut r = self.next_u64();
            let idx = (r & 0xff) as usize;
            r >>= 8;
            let negative = r & 1 == 1;
            let rabs = (r >> 1) & 0x000f_ffff_ffff_ffff;
            let mut x = rabs as f64 * WI[idx];
            if negative {
                x = -x;
            }
            if rabs < KI[idx] {
                return x;
            }
            if idx == 0 {
                loop {
                    let xx = -NOR_INV_R * (-self.random()).ln_1p();
                    let yy = -(-self.random()).ln_1p();
                    if yy + yy > xx * xx {
                        return if (rabs >> 8) & 1 == 1 {
                            -(NOR_R + xx)
                        } else {
                            NOR_R + xx
                        };
                    }
                }
            }
            if (FI[idx - 1] - FI[idx]) * self.random() + FI[idx] < (-0.5 * x * x).exp() {
                return x;
            }
        }
    }

    /// `Generator.lognormal(mu, sigma)`.
    pub fn lognormal(&mut self, mu: f64, sigma: f64) -> f64 {
        (mu + sigma * self.standard_normal()).exp()
    }

    /// `Generator.bytes(n)`: 32-bit words, little-endian, cut to `n`.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let words = n.saturating_sub(1) / 4 + 1;
        let mut out = Vec::with_capacity(words * 4);
        for _ in 0..words {
            out.extend_from_slice(&self.next_u32().to_le_bytes());
        }
        out.truncate(n);
        out
    }

    /// `Generator.integers(low, high)` for a span `high - low` of at most 2^32 (Lemire's method
    /// on 32-bit words, as NumPy draws a scalar `int64` in such a span).
    pub fn integers(&mut self, low: i64, high: i64) -> i64 {
        let span = high.saturating_sub(low);
        if span <= 1 {
            return low;
        }
        let rng = (span - 1) as u64;
        if rng >= u64::from(u32::MAX) {
            return low + i64::from(self.next_u32());
        }
        let excl = rng + 1;
        let mut m = u64::from(self.next_u32()) * excl;
        let mut leftover = m & 0xffff_ffff;
        if leftover < excl {
            let threshold = (u64::from(u32::MAX) - rng) % excl;
            while leftover < threshold {
                m = u64::from(self.next_u32()) * excl;
                leftover = m & 0xffff_ffff;
            }
        }
        low + (m >> 32) as i64
    }

    /// `Generator.choice(len(p), p=p)`: one uniform draw against the normalised running sum.
    pub fn choice(&mut self, p: &[f64]) -> usize {
        let mut cdf = Vec::with_capacity(p.len());
        let mut acc = 0.0;
        for &w in p {
            acc += w;
            cdf.push(acc);
        }
        let last = cdf.last().copied().unwrap_or(1.0);
        for c in &mut cdf {
            *c /= last;
        }
        let u = self.random();
        cdf.partition_point(|&c| c <= u)
    }
}

/// NumPy's sum of a float64 array (`np.sum`): pairwise, eight lanes at a time in blocks of 128.
pub fn np_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        return a.iter().fold(0.0, |s, &x| s + x);
    }
    if n <= 128 {
        let mut r = [0.0; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i < n - n % 8 {
            for (j, lane) in r.iter_mut().enumerate() {
                *lane += a[i + j];
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for &x in &a[i..] {
            res += x;
        }
        return res;
    }
    let mut half = n / 2;
    half -= half % 8;
    np_sum(&a[..half]) + np_sum(&a[half..])
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected values: NumPy 2.4's `default_rng` with the same seeds and calls.
    #[test]
    fn raw_words_match_numpy() {
        let mut g = NpRng::new(42);
        assert_eq!(
            [g.next_u64(), g.next_u64(), g.next_u64()],
            [0xc621fbcd16d92688, 0x705a5661a791ffc1, 0xdbcd12c26eda1624]
        );
        assert_eq!(NpRng::new(0).random(), 0.6369616873214543);
        let mut g = NpRng::new(42);
        assert_eq!(
            (g.random(), g.random()),
            (0.7739560485559633, 0.4388784397520523)
        );
    }

    #[test]
    fn normals_bytes_and_integers_match_numpy() {
        let mut g = NpRng::new(42);
        let x: Vec<f64> = (0..3).map(|_| g.standard_normal()).collect();
        assert_eq!(
            x,
            [0.30471707975443135, -1.0399841062404955, 0.7504511958064572]
        );
        let mut g = NpRng::new(7);
        let xs: Vec<f64> = (0..200_000).map(|_| g.standard_normal()).collect();
        assert_eq!(np_sum(&xs), 190.85261457580395);
        let mut g = NpRng::new(42);
        let hex = |b: Vec<u8>| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        assert_eq!(hex(g.bytes(16)), "8826d916cdfb21c6c1ff91a761565a70");
        assert_eq!(g.integers(5, 15), 9);
        assert_eq!(hex(g.bytes(16)), "c212cddb8d8800160eb686b2eb819333");
        assert_eq!(g.integers(0, 1000), 94);
        let mut g = NpRng::new(42);
        assert_eq!(g.lognormal(7.5, 1.15), 2566.8240660221027);
    }

    #[test]
    fn a_seed_over_32_bits_is_two_entropy_words() {
        // default_rng(2**40 + 5).random()
        assert_eq!(NpRng::new((1 << 40) + 5).random(), BIG_SEED_RANDOM);
    }

    const BIG_SEED_RANDOM: f64 = 0.004739459374490829;
}
