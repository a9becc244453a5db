//! The random source the policy draws from: uniform numbers in (0, 1),
//! injected so that a simulation, a test or a conformance vector can fix
//! every draw.

/// A source of uniform draws in the open interval (0, 1).
pub trait Random {
    /// The next draw.
    fn unit(&mut self) -> f64;
}

impl<F: FnMut() -> f64> Random for F {
    fn unit(&mut self) -> f64 {
        self()
    }
}

/// A small seeded generator (SplitMix64) for production use, where the
/// draws need only be independent, not reproducible across programs.
#[derive(Debug, Clone)]
pub struct SplitMix {
    state: u64,
}

impl SplitMix {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// A generator seeded from the system clock and the address of a local.
    pub fn from_time() -> Self {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let local = 0u8;
        Self::new(nanos as u64 ^ (&local as *const u8 as u64).rotate_left(32))
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

impl Random for SplitMix {
    fn unit(&mut self) -> f64 {
        // 53 random bits, shifted by half a step: never 0, never 1.
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_stay_inside_the_open_interval_and_average_one_half() {
        let mut r = SplitMix::new(1);
        let n = 100_000;
        let draws: Vec<f64> = (0..n).map(|_| r.unit()).collect();
        assert!(draws.iter().all(|&u| u > 0.0 && u < 1.0));
        let mean = draws.iter().sum::<f64>() / n as f64;
        // sd of U(0,1) = 1/sqrt(12); 5 standard errors.
        assert!((mean - 0.5).abs() < 5.0 / (12f64.sqrt() * (n as f64).sqrt()), "{mean}");
        let mut fixed = || 0.25;
        assert_eq!(fixed.unit(), 0.25);
    }
}
