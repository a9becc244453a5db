//! A table of ready-made text cells, for the terminal (left-aligned
//! columns) or as Markdown: the table of `frontier` and `collapse-rate`.

use std::fmt::Write as _;

/// Writes `header` and `rows` to `out`, one line each. As Markdown, the
/// cells stand as they are, between `|`, and `align` (such as
/// `|---|---:|`) is the second line; for the terminal, each column is as
/// wide as its widest cell, columns are two spaces apart and no line ends
/// in spaces.
pub fn write_table<const N: usize>(
    out: &mut String,
    header: [&str; N],
    rows: &[[String; N]],
    markdown: bool,
    align: &str,
) {
    if markdown {
        let _ = writeln!(out, "| {} |", header.join(" | "));
        let _ = writeln!(out, "{align}");
        for r in rows {
            let _ = writeln!(out, "| {} |", r.join(" | "));
        }
        return;
    }
    let widths: Vec<usize> =
        (0..N).map(|i| rows.iter().map(|r| r[i].chars().count()).chain([header[i].len()]).max().unwrap_or(0)).collect();
    let line = |cells: &[String]| {
        cells.iter().enumerate().map(|(i, c)| format!("{c:<w$}", w = widths[i])).collect::<Vec<_>>().join("  ")
    };
    let _ = writeln!(out, "{}", line(&header.map(String::from)).trim_end());
    for r in rows {
        let _ = writeln!(out, "{}", line(r).trim_end());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_as_wide_as_their_widest_cell() {
        let rows = [["a".to_string(), "1".to_string()], ["long name".to_string(), "22".to_string()]];
        let mut text = String::new();
        write_table(&mut text, ["name", "n"], &rows, false, "");
        assert_eq!(text, "name       n\na          1\nlong name  22\n");
        let mut md = String::new();
        write_table(&mut md, ["name", "n"], &rows, true, "|---|---:|");
        assert_eq!(md, "| name | n |\n|---|---:|\n| a | 1 |\n| long name | 22 |\n");
    }
}
