//! Words for counts in what users read: `1 warning`, `2 warnings`,
//! `0 errors`, never `warning(s)`.

/// `n` and the noun, in the plural unless `n` is 1: `1 warning`,
/// `0 errors`, `3 times`. For a regular plural (the noun + `s`).
pub fn plural(n: usize, noun: &str) -> String {
    if n == 1 { format!("1 {noun}") } else { format!("{n} {noun}s") }
}

/// `n` and `one` or `many`: `plural_as(2, "replica", "replicas")`, for a
/// plural that is not the noun + `s` (`1 variant has`, `2 variants have`).
pub fn plural_as(n: usize, one: &str, many: &str) -> String {
    if n == 1 { format!("1 {one}") } else { format!("{n} {many}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_number_plural() {
        assert_eq!(plural(0, "error"), "0 errors");
        assert_eq!(plural(1, "warning"), "1 warning");
        assert_eq!(plural(2, "warning"), "2 warnings");
        assert_eq!(plural(1, "time"), "1 time");
        assert_eq!(plural_as(3, "variant has", "variants have"), "3 variants have");
        assert_eq!(plural_as(1, "variant has", "variants have"), "1 variant has");
    }
}
