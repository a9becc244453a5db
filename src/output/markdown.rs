//! Markdown escaping, so that names with `|`, `*`, `_` or brackets (a
//! variant named `no | retries`) neither break a table nor turn into markup.

/// Escapes Markdown markup in inline text.
pub fn escape(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (i, &c) in chars.iter().enumerate() {
        // An underscore inside a word (`success_rate`) is no markup.
        let inside = |j: Option<usize>| j.and_then(|j| chars.get(j)).is_some_and(|c| c.is_alphanumeric());
        let markup = match c {
            '_' => !(inside(i.checked_sub(1)) && inside(Some(i + 1))),
            '\\' | '|' | '*' | '`' | '[' | ']' | '<' | '>' | '#' => true,
            _ => false,
        };
        if markup {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Escapes a table cell: markup escaped and line breaks made spaces.
pub fn cell(text: &str) -> String {
    escape(&text.replace(['\n', '\r'], " "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipes_and_markup_are_escaped() {
        assert_eq!(cell("no | retries"), "no \\| retries");
        assert_eq!(escape("a_b _c_ *d* [e]"), "a_b \\_c\\_ \\*d\\* \\[e\\]");
        assert_eq!(cell("two\nlines"), "two lines");
    }
}
