//! Expected values: scipy 1.17.1's `ks_2samp` (method auto) on the samples of
//! tests/data/ks_2samp/cases.json (its README gives the command that wrote them).

use super::*;

/// A sample as the fixture gives it: the values, or the generator
/// `((i · mul + add) mod modulus) / modulus · scale + shift` for i in 0..n.
fn sample(v: &serde_json::Value) -> Vec<f64> {
    if let Some(values) = v.as_array() {
        return values.iter().map(|x| x.as_f64().unwrap()).collect();
    }
    let int = |k: &str| v[k].as_u64().unwrap();
    let float = |k: &str| v[k].as_f64().unwrap();
    let (mul, add, modulus) = (int("mul"), int("add"), int("modulus"));
    (0..int("n"))
        .map(|i| {
            ((i * mul + add) % modulus) as f64 / modulus as f64 * float("scale") + float("shift")
        })
        .collect()
}

fn close(got: f64, want: f64) -> bool {
    (got - want).abs() <= 1e-14 || (got - want).abs() <= 1e-9 * want.abs()
}

#[test]
fn statistic_and_p_value_match_scipy() {
    let fixture: serde_json::Value =
        serde_json::from_str(include_str!("../../../tests/data/ks_2samp/cases.json")).unwrap();
    let cases = fixture["cases"].as_array().unwrap();
    assert!(cases.len() >= 18);
    let mut asymptotic = 0;
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let (a, b) = (sample(&case["a"]), sample(&case["b"]));
        let t = ks_2samp(&a, &b).unwrap();
        let (d, p) = (
            case["statistic"].as_f64().unwrap(),
            case["pvalue"].as_f64().unwrap(),
        );
        assert!(
            (t.statistic - d).abs() < 1e-12,
            "{name}: D {} against scipy's {d}",
            t.statistic
        );
        assert!(
            close(t.p_value, p),
            "{name}: p {} against scipy's {p}",
            t.p_value
        );
        let exact = a.len().max(b.len()) <= MAX_EXACT;
        assert_eq!(t.method == KsMethod::Exact, exact, "{name}");
        asymptotic += usize::from(!exact);
    }
    // Both regimes are covered.
    assert!(asymptotic >= 6 && asymptotic < cases.len());
}

#[test]
fn ties_count_a_value_once() {
    // [1, 1, 2] against [1, 2, 2]: after 1 the ECDFs are 2/3 and 1/3, after 2 both 1, so
    // D = 1/3 (counting the ties one by one would see 2/3 against 0 and give D = 2/3).
    let t = ks_2samp(&[1.0, 1.0, 2.0], &[1.0, 2.0, 2.0]).unwrap();
    assert!((t.statistic - 1.0 / 3.0).abs() < 1e-15, "{t:?}");
    // Exact, n = m = 3, D = 1/3: a path leaves |x - y| < 1 at once; P = 1.
    assert_eq!(t.p_value, 1.0);
}

#[test]
fn equal_sizes_against_the_reflection_formula() {
    // n = m: P(D >= h/n) = 2 Σ_{k>=1} (-1)^(k-1) C(2n, n - k h) / C(2n, n), summed here in
    // exact integers for n = 10, h = 5 (a different path from the lattice pass).
    fn binom(n: u128, k: u128) -> u128 {
        (0..k).fold(1u128, |acc, i| acc * (n - i) / (i + 1))
    }
    let (n, h) = (10u128, 5u128);
    let mut num: i128 = 0;
    let mut k = 1;
    while k * h <= n {
        let term = binom(2 * n, n - k * h) as i128;
        num += if k % 2 == 1 { term } else { -term };
        k += 1;
    }
    let want = 2.0 * num as f64 / binom(2 * n, n) as f64;
    // Ten values and ten values shifted by 0.5 apart: D = 5/10.
    let a: Vec<f64> = (0..10).map(f64::from).collect();
    let b: Vec<f64> = (0..10).map(|i| f64::from(i) + 4.5).collect();
    let t = ks_2samp(&a, &b).unwrap();
    assert!((t.statistic - 0.5).abs() < 1e-15, "{t:?}");
    assert!(
        (t.p_value - want).abs() < 1e-15,
        "{} against {want}",
        t.p_value
    );
}

#[test]
fn degenerate_inputs_are_errors_not_panics() {
    assert_eq!(ks_2samp(&[], &[1.0]), Err(KsError::Empty));
    assert_eq!(ks_2samp(&[1.0], &[]), Err(KsError::Empty));
    assert_eq!(ks_2samp(&[], &[]), Err(KsError::Empty));
    assert_eq!(ks_2samp(&[1.0, f64::NAN], &[1.0]), Err(KsError::NotFinite));
    assert_eq!(ks_2samp(&[1.0], &[f64::INFINITY]), Err(KsError::NotFinite));
    // One value each: D is 0 or 1 and the p-value 1 (every path of one step each way).
    let t = ks_2samp(&[1.0], &[2.0]).unwrap();
    assert_eq!((t.statistic, t.p_value), (1.0, 1.0));
    // Signed zeros are one value.
    let t = ks_2samp(&[-0.0, 1.0], &[0.0, 1.0]).unwrap();
    assert_eq!((t.statistic, t.p_value), (0.0, 1.0));
}
