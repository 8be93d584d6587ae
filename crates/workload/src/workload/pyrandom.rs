//! Python's `random.Random` (the Mersenne Twister MT19937 as CPython seeds and reads it) and
//! AIPerf 0.13's seed derivation (`random_generator.derive`): where ringperf must draw exactly
//! what AIPerf draws for the same `--random-seed` (a Baseten trace's session sampling), it draws
//! from these.

/// AIPerf's child seed of `identifier` under the run's seed: the first 8 bytes, big-endian, of
/// the SHA-256 of `"{root}:{identifier}"`.
pub fn aiperf_derive(root: u64, identifier: &str) -> u64 {
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{root}:{identifier}").as_bytes(),
    );
    let mut b = [0u8; 8];
    b.copy_from_slice(&digest.as_ref()[..8]);
    u64::from_be_bytes(b)
}

const N: usize = 624;
const M: usize = 397;

/// `random.Random(seed)` for an integer seed.
#[derive(Clone, Debug)]
pub struct PyRandom {
    mt: [u32; N],
    index: usize,
}

impl PyRandom {
    /// CPython's `random.seed(n)` for a non-negative integer: `init_by_array` over the seed's
    /// 32-bit words, least significant first (one word 0 for 0).
    pub fn new(seed: u64) -> Self {
        let key: Vec<u32> = if seed >> 32 == 0 {
            vec![seed as u32]
        } else {
            vec![seed as u32, (seed >> 32) as u32]
        };
        let mut r = Self {
            mt: [0; N],
            index: N,
        };
        r.init_genrand(19_650_218);
        let (mut i, mut j) = (1usize, 0usize);
        for _ in 0..N.max(key.len()) {
            let prev = r.mt[i - 1] ^ (r.mt[i - 1] >> 30);
            r.mt[i] = (r.mt[i] ^ prev.wrapping_mul(1_664_525))
                .wrapping_add(key[j])
                .wrapping_add(j as u32);
            i += 1;
            j += 1;
            if i >= N {
                r.mt[0] = r.mt[N - 1];
                i = 1;
            }
            if j >= key.len() {
                j = 0;
            }
        }
        for _ in 0..N - 1 {
            let prev = r.mt[i - 1] ^ (r.mt[i - 1] >> 30);
            r.mt[i] = (r.mt[i] ^ prev.wrapping_mul(1_566_083_941)).wrapping_sub(i as u32);
            i += 1;
            if i >= N {
                r.mt[0] = r.mt[N - 1];
                i = 1;
            }
        }
        r.mt[0] = 0x8000_0000;
        r
    }

    fn init_genrand(&mut self, s: u32) {
        self.mt[0] = s;
        for i in 1..N {
            let prev = self.mt[i - 1] ^ (self.mt[i - 1] >> 30);
            self.mt[i] = 1_812_433_253u32.wrapping_mul(prev).wrapping_add(i as u32);
        }
        self.index = N;
    }

    fn twist(&mut self) {
        for i in 0..N {
            let y = (self.mt[i] & 0x8000_0000) | (self.mt[(i + 1) % N] & 0x7fff_ffff);
            let mut v = self.mt[(i + M) % N] ^ (y >> 1);
            if y & 1 != 0 {
                v ^= 0x9908_b0df;
            }
            self.mt[i] = v;
        }
        self.index = 0;
    }

    /// The next 32-bit output (`genrand_uint32`).
    pub fn next_u32(&mut self) -> u32 {
        if self.index >= N {
            self.twist();
        }
        let mut y = self.mt[self.index];
        self.index += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// `random()`: a float in [0, 1) from 53 random bits.
    pub fn random(&mut self) -> f64 {
        let a = f64::from(self.next_u32() >> 5);
        let b = f64::from(self.next_u32() >> 6);
        (a * 67_108_864.0 + b) * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `uniform(a, b)`.
    pub fn uniform(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.random()
    }

    /// `getrandbits(k)` for `k` ≤ 32.
    pub fn getrandbits(&mut self, k: u32) -> u32 {
        match k {
            0 => 0,
            1..=32 => self.next_u32() >> (32 - k),
            _ => panic!("getrandbits above 32 bits is not used"),
        }
    }

    /// `_randbelow(n)`: uniform in `0..n` by rejection over `n`'s bit length (`n` ≥ 1, below
    /// 2^32).
    pub fn randbelow(&mut self, n: u32) -> u32 {
        let k = 32 - n.leading_zeros();
        loop {
            let r = self.getrandbits(k);
            if r < n {
                return r;
            }
        }
    }

    /// `choice(seq)`'s index for a sequence of `len` items (`len` ≥ 1).
    pub fn choice_index(&mut self, len: usize) -> usize {
        self.randbelow(u32::try_from(len).unwrap_or(u32::MAX)) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Vectors from CPython 3.11 (`random.Random(seed)`), computed beside the code.
    #[test]
    fn draws_are_cpythons() {
        let mut r = PyRandom::new(5);
        assert_eq!(r.random(), 0.6229016948897019);
        assert_eq!(r.getrandbits(3), 5);
        assert_eq!([1, 2, 3, 4, 5][r.choice_index(5)], 3);
        // A 64-bit seed (two key words): AIPerf's derived seed of `--random-seed 7` for the
        // Baseten session sampling.
        let seed = aiperf_derive(7, "dataset.loader.baseten_trace.session_sampling");
        assert_eq!(seed, 1_951_598_797_319_958_812);
        let mut r = PyRandom::new(seed);
        let got: Vec<f64> = (0..4).map(|_| r.uniform(0.0, 1.0)).collect();
        assert_eq!(
            got,
            [
                0.713858125457237,
                0.9279108968166627,
                0.2162289778973403,
                0.8745953248085678
            ]
        );
        let mut r = PyRandom::new(0);
        assert_eq!(r.random(), 0.8444218515250481);
    }
}
