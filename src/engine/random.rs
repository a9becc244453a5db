//! Counter-based random numbers keyed by what they are for.
//!
//! Every draw is derived from a hash of (run seed, purpose, keys…), so a draw
//! for one request never shifts the draws of any other: variants compared
//! under the same seed see the same arrivals, service demands and fault
//! draws (common random numbers). The mixing function is SplitMix64's
//! finaliser, fixed here, so results do not depend on any crate's version.

use rand::rand_core::TryRng;
use std::convert::Infallible;

const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// SplitMix64's output function: a bijective avalanche mix of one word.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Hashes a sequence of words into one well-mixed word.
#[inline]
pub fn hash_words(seed: u64, words: &[u64]) -> u64 {
    hash_from(mix64(seed ^ GOLDEN), words)
}

/// [`hash_words`] from its first round, `mix64(seed ^ GOLDEN)`, already done.
#[inline]
fn hash_from(mut h: u64, words: &[u64]) -> u64 {
    for (i, &w) in words.iter().enumerate() {
        h = mix64(h ^ w.wrapping_add(GOLDEN.wrapping_mul(i as u64 + 1)));
    }
    h
}

/// Maps a word to a uniform number in the open interval (0, 1).
#[inline]
pub fn unit_open(word: u64) -> f64 {
    ((word >> 11) as f64 + 0.5) * (1.0 / (1u64 << 53) as f64)
}

/// The random source of one run: a seed from which keyed draws and
/// streams are derived.
#[derive(Clone, Copy, Debug)]
pub struct KeyedRandom {
    seed: u64,
    /// The first round of every hash of a key, `mix64(seed ^ GOLDEN)`,
    /// done once instead of per draw.
    first: u64,
}

impl KeyedRandom {
    /// The source for replication `replication` of an experiment seeded
    /// with `seed`. It does not depend on the variant.
    pub fn for_replication(seed: u64, replication: u64) -> Self {
        Self::from_seed(hash_words(seed, &[0x5EED, replication]))
    }

    /// The source with this raw seed (a branch of a run, see
    /// `World::branch`).
    pub fn from_seed(seed: u64) -> Self {
        Self { seed, first: mix64(seed ^ GOLDEN) }
    }

    /// The raw seed every draw is keyed by.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// One uniform draw in (0, 1) for the given key.
    #[inline]
    pub fn unit(&self, key: &[u64]) -> f64 {
        unit_open(hash_from(self.first, key))
    }

    /// A stream of draws for the given key (for samplers needing several).
    #[inline]
    pub fn stream(&self, key: &[u64]) -> Stream {
        Stream { state: hash_from(self.first, key) }
    }
}

/// A SplitMix64 generator: a counter passed through [`mix64`].
#[derive(Clone, Debug)]
pub struct Stream {
    state: u64,
}

impl Stream {
    /// A stream starting from `state`.
    pub fn from_state(state: u64) -> Self {
        Self { state }
    }

    /// The next word.
    #[inline]
    pub fn next_word(&mut self) -> u64 {
        self.state = self.state.wrapping_add(GOLDEN);
        mix64(self.state)
    }

    /// The next uniform draw in (0, 1).
    #[inline]
    pub fn unit(&mut self) -> f64 {
        unit_open(self.next_word())
    }
}

impl TryRng for Stream {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok((self.next_word() >> 32) as u32)
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(self.next_word())
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dst.chunks_mut(8) {
            let bytes = self.next_word().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splitmix_reference_values() {
        // SplitMix64 seeded with 0 (reference implementation by S. Vigna).
        let mut s = Stream::from_state(0);
        assert_eq!(s.next_word(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(s.next_word(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn keys_are_independent_of_draw_order() {
        let r = KeyedRandom::for_replication(7, 0);
        let a = r.unit(&[1, 2, 3]);
        let _ = r.unit(&[9, 9, 9]);
        assert_eq!(a, r.unit(&[1, 2, 3]));
        assert_ne!(a, r.unit(&[1, 2, 4]));
        assert_ne!(a, KeyedRandom::for_replication(7, 1).unit(&[1, 2, 3]));
    }

    #[test]
    fn unit_draws_are_uniform() {
        let r = KeyedRandom::for_replication(1, 0);
        let n = 200_000;
        let mean: f64 = (0..n).map(|i| r.unit(&[i])).sum::<f64>() / n as f64;
        // Standard error of the mean of U(0,1) is sqrt(1/12/n) ~ 0.00065.
        assert!((mean - 0.5).abs() < 4.0 * (1.0f64 / 12.0 / n as f64).sqrt(), "{mean}");
    }
}
