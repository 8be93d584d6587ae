//! NumPy's reductions that `quality.json` reports (`np.sum`, and the statistics built on it), so
//! that its figures are AIPerf's to the last bit. The random stream is the workload crate's
//! ([`ringperf_workload::workload::nprandom::NpRandom`]).

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
    use ringperf_workload::workload::nprandom::NpRandom;

    /// `np.sum` of 200,000 normals of `default_rng(7)`: NumPy's pairwise sum, to the last bit.
    #[test]
    fn the_sum_is_numpys() {
        let mut g = NpRandom::new(7);
        let xs: Vec<f64> = (0..200_000).map(|_| g.standard_normal()).collect();
        assert_eq!(np_sum(&xs), 190.85261457580395);
    }
}
