//! NumPy's default generator (`numpy.random.default_rng(seed)`: a `SeedSequence` feeding a
//! PCG64) for an integer seed, and the draws ringperf needs from it, each consuming the words
//! NumPy's does: where AIPerf 0.13 draws from NumPy and ringperf must draw the same numbers for
//! the same seed (an agentic replay's start instant per lane, `synthesize agentic-code`'s
//! sessions), it draws from this.

mod ziggurat;

use ziggurat::{FI, KI, WI};

/// The ziggurat's base-strip edge and its inverse.
const NOR_R: f64 = 3.654_152_885_361_009;
const NOR_INV_R: f64 = 0.273_661_237_329_758_3;

/// `SeedSequence`'s pool of 32-bit words and its hashing constants.
const POOL: usize = 4;
const INIT_A: u32 = 0x43b0_d7e5;
const MULT_A: u32 = 0x931e_8875;
const INIT_B: u32 = 0x8b51_f9dd;
const MULT_B: u32 = 0x58f3_8ded;
const MIX_L: u32 = 0xca01_f9dd;
const MIX_R: u32 = 0x4973_f715;
const XSHIFT: u32 = 16;
/// PCG64's 128-bit LCG multiplier.
const PCG_MULT: u128 = 0x2360_ed05_1fc6_5da4_4385_df64_9fcc_f645;

fn hashmix(value: u32, hash: &mut u32) -> u32 {
    let mut v = value ^ *hash;
    *hash = hash.wrapping_mul(MULT_A);
    v = v.wrapping_mul(*hash);
    v ^ (v >> XSHIFT)
}

fn mix(x: u32, y: u32) -> u32 {
    let r = MIX_L.wrapping_mul(x).wrapping_sub(MIX_R.wrapping_mul(y));
    r ^ (r >> XSHIFT)
}

/// The pool of `SeedSequence(seed)` (no spawn key).
fn pool(seed: u64) -> [u32; POOL] {
    // The seed's 32-bit words, least significant first; one word 0 for 0.
    let entropy: Vec<u32> = if seed >> 32 == 0 {
        vec![seed as u32]
    } else {
        vec![seed as u32, (seed >> 32) as u32]
    };
    let mut hash = INIT_A;
    let mut pool = [0u32; POOL];
    for (i, p) in pool.iter_mut().enumerate() {
        *p = hashmix(entropy.get(i).copied().unwrap_or(0), &mut hash);
    }
    for src in 0..POOL {
        for dst in 0..POOL {
            if src != dst {
                let h = hashmix(pool[src], &mut hash);
                pool[dst] = mix(pool[dst], h);
            }
        }
    }
    // A seed of at most 64 bits is two words: nothing is left over the pool.
    pool
}

/// `SeedSequence(seed).generate_state(4, uint64)`.
fn state_words(seed: u64) -> [u64; 4] {
    let pool = pool(seed);
    let mut hash = INIT_B;
    let mut words = [0u32; 8];
    for (i, w) in words.iter_mut().enumerate() {
        let mut v = pool[i % POOL] ^ hash;
        hash = hash.wrapping_mul(MULT_B);
        v = v.wrapping_mul(hash);
        *w = v ^ (v >> XSHIFT);
    }
    // Little-endian pairs of 32-bit words.
    std::array::from_fn(|i| u64::from(words[2 * i]) | (u64::from(words[2 * i + 1]) << 32))
}

/// `numpy.random.default_rng(seed)`.
#[derive(Clone, Debug)]
pub struct NpRandom {
    state: u128,
    inc: u128,
    /// The upper half of the last 64-bit output, not yet used by a 32-bit draw.
    spare: Option<u32>,
}

impl NpRandom {
    /// The generator NumPy seeds from the integer `seed`.
    pub fn new(seed: u64) -> Self {
        let w = state_words(seed);
        let init_state = (u128::from(w[0]) << 64) | u128::from(w[1]);
        let init_seq = (u128::from(w[2]) << 64) | u128::from(w[3]);
        let mut r = Self {
            state: 0,
            inc: (init_seq << 1) | 1,
            spare: None,
        };
        r.step();
        r.state = r.state.wrapping_add(init_state);
        r.step();
        r
    }

    fn step(&mut self) {
        self.state = self.state.wrapping_mul(PCG_MULT).wrapping_add(self.inc);
    }

    /// The next raw 64-bit output (`bit_generator.random_raw()`).
    pub fn next_u64(&mut self) -> u64 {
        self.step();
        let s = self.state;
        (((s >> 64) as u64) ^ (s as u64)).rotate_right((s >> 122) as u32)
    }

    /// The next 32-bit output: the low half of a fresh 64-bit one, then its high half.
    pub fn next_u32(&mut self) -> u32 {
        if let Some(high) = self.spare.take() {
            return high;
        }
        let v = self.next_u64();
        self.spare = Some((v >> 32) as u32);
        v as u32
    }

    /// `random()`: a double in [0, 1) from the top 53 bits.
    pub fn random(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `uniform(low, high)`.
    pub fn uniform(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.random()
    }

    /// `standard_normal()`: NumPy's 256-layer ziggurat.
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

    /// `lognormal(mu, sigma)`.
    pub fn lognormal(&mut self, mu: f64, sigma: f64) -> f64 {
        (mu + sigma * self.standard_normal()).exp()
    }

    /// `bytes(n)`: 32-bit outputs, little-endian, cut to `n`.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let words = n.saturating_sub(1) / 4 + 1;
        let mut out = Vec::with_capacity(words * 4);
        for _ in 0..words {
            out.extend_from_slice(&self.next_u32().to_le_bytes());
        }
        out.truncate(n);
        out
    }

    /// `integers(low, high)` for a span of at most 2³² ([`Self::below`]); `low` for an empty one.
    pub fn integers(&mut self, low: i64, high: i64) -> i64 {
        let span = high.saturating_sub(low);
        if span <= 1 {
            return low;
        }
        low + self.below(span as u64) as i64
    }

    /// `choice(len(p), p=p)`: one uniform draw against the normalised running sum of `p`.
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

    /// `integers(0, n)` for `1 ≤ n ≤ 2³²` (Lemire's bounded draw over 32-bit outputs, as NumPy
    /// draws a range of at most 32 bits); 0 for `n ≤ 1`.
    pub fn below(&mut self, n: u64) -> u64 {
        if n <= 1 {
            return 0;
        }
        let max = n - 1;
        if max >= u64::from(u32::MAX) {
            return u64::from(self.next_u32());
        }
        let excl = n as u32;
        let mut m = u64::from(self.next_u32()) * u64::from(excl);
        let mut left = m as u32;
        if left < excl {
            let threshold = excl.wrapping_neg() % excl;
            while left < threshold {
                m = u64::from(self.next_u32()) * u64::from(excl);
                left = m as u32;
            }
        }
        m >> 32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // NumPy 2.4's `default_rng` with the same seeds and calls.
    #[test]
    fn normals_bytes_and_integers_are_numpys() {
        let mut g = NpRandom::new(42);
        assert_eq!(
            [g.next_u64(), g.next_u64(), g.next_u64()],
            [0xc621fbcd16d92688, 0x705a5661a791ffc1, 0xdbcd12c26eda1624]
        );
        let mut g = NpRandom::new(42);
        assert_eq!(
            (g.random(), g.random()),
            (0.7739560485559633, 0.4388784397520523)
        );
        let mut g = NpRandom::new(42);
        let x: Vec<f64> = (0..3).map(|_| g.standard_normal()).collect();
        assert_eq!(
            x,
            [0.30471707975443135, -1.0399841062404955, 0.7504511958064572]
        );
        let mut g = NpRandom::new(42);
        let hex = |b: Vec<u8>| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        assert_eq!(hex(g.bytes(16)), "8826d916cdfb21c6c1ff91a761565a70");
        assert_eq!(g.integers(5, 15), 9);
        assert_eq!(hex(g.bytes(16)), "c212cddb8d8800160eb686b2eb819333");
        assert_eq!(g.integers(0, 1000), 94);
        let mut g = NpRandom::new(42);
        assert_eq!(g.lognormal(7.5, 1.15), 2566.8240660221027);
        // default_rng(2**40 + 5).random(): a seed over 32 bits is two entropy words.
        assert_eq!(NpRandom::new((1 << 40) + 5).random(), 0.004739459374490829);
    }

    /// What NumPy 2 gives for these seeds (`default_rng(seed)`: its state after seeding, the
    /// first three raw outputs, the first `random()`, `uniform(1000, 6000)` of a fresh generator,
    /// and six `choice([3, 4, 5, 6, 7])` then `integers(0, 10)`).
    #[test]
    fn draws_are_numpys() {
        struct Case {
            seed: u64,
            state: u128,
            inc: u128,
            raw: [u64; 3],
            random: f64,
            uniform: f64,
            choice: [u64; 6],
            ten: u64,
        }
        let cases = [
            Case {
                seed: 0,
                state: 35399562948360463058890781895381311971,
                inc: 87136372517582989555478159403783844777,
                raw: [
                    11749869230777074271,
                    4976686463289251617,
                    755828109848996024,
                ],
                random: 0.6369616873214543,
                uniform: 2348.9335688193514,
                choice: [7, 6, 5, 4, 4, 3],
                ten: 0,
            },
            Case {
                seed: 7,
                state: 208745520555909116978795849195383758904,
                inc: 261136684632268670825940853076396136793,
                raw: [
                    11530976094092348043,
                    16550673365885938325,
                    14308875409591826786,
                ],
                random: 0.625095466604667,
                uniform: 5486.069004847877,
                choice: [7, 6, 6, 7, 5, 6],
                ten: 8,
            },
            Case {
                seed: u64::MAX,
                state: 294777589713777894971777624378622791088,
                inc: 73721096341569855656437781216719622637,
                raw: [
                    12544278110101001871,
                    15593249672699323225,
                    136562751618339402,
                ],
                random: 0.6800266789616931,
                uniform: 5226.558792812371,
                choice: [5, 6, 7, 7, 4, 3],
                ten: 1,
            },
            Case {
                seed: 12345678901234567,
                state: 42399502334667108751624586436916707019,
                inc: 77790818124381425933107269713898593929,
                raw: [
                    6272352374605034691,
                    16543712445103275033,
                    18218574483993826661,
                ],
                random: 0.3400249035570695,
                uniform: 5484.182243489112,
                choice: [6, 4, 3, 7, 5, 7],
                ten: 2,
            },
        ];
        for c in cases {
            let mut r = NpRandom::new(c.seed);
            assert_eq!((r.state, r.inc), (c.state, c.inc), "seed {}", c.seed);
            assert_eq!(
                [r.next_u64(), r.next_u64(), r.next_u64()],
                c.raw,
                "seed {}",
                c.seed
            );
            let mut r = NpRandom::new(c.seed);
            assert_eq!(r.random(), c.random);
            assert_eq!(r.uniform(1000.0, 6000.0), c.uniform);
            let mut r = NpRandom::new(c.seed);
            let choice: Vec<u64> = (0..6).map(|_| 3 + r.below(5)).collect();
            assert_eq!(choice, c.choice, "seed {}", c.seed);
            assert_eq!(r.below(10), c.ten, "seed {}", c.seed);
        }
    }
}
